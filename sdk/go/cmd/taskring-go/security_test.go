package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

type tokenNode struct {
	pb.UnimplementedTaskServiceServer
	seen []string
}

func (n *tokenNode) GetTask(ctx context.Context, r *pb.GetTaskRequest) (*pb.GetTaskResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	n.seen = append(n.seen, strings.Join(md.Get("authorization"), "|"))
	if len(md.Get("authorization")) == 0 {
		return nil, status.Error(codes.Unauthenticated, "authorization: a token is required")
	}
	return &pb.GetTaskResponse{Task: &pb.Task{TaskId: r.GetTaskId(), Namespace: "billing", TaskType: "t", PayloadJson: "{}"},
		State: pb.TaskState_TASK_STATE_QUEUED}, nil
}

func serveTokenNode(t *testing.T) (*tokenNode, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &tokenNode{}
	srv := grpc.NewServer()
	pb.RegisterTaskServiceServer(srv, n)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return n, lis.Addr().String()
}

func TestGetSendsTASKRING_TOKENFromTheEnvironment(t *testing.T) {
	n, addr := serveTokenNode(t)
	t.Setenv("TASKRING_TOKEN", "trk_cli-secret")
	var out bytes.Buffer
	if err := runGet([]string{"--nodes", addr, "--task-id", "t1"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"state":"queued"`) || !strings.Contains(out.String(), `"namespace":"billing"`) {
		t.Errorf("printed %q", out.String())
	}
	if len(n.seen) != 1 || n.seen[0] != "Bearer trk_cli-secret" {
		t.Errorf("authorization sent: %q", n.seen)
	}
}

func TestGetWithoutATokenFailsUnauthenticated(t *testing.T) {
	_, addr := serveTokenNode(t)
	t.Setenv("TASKRING_TOKEN", "")
	err := runGet([]string{"--nodes", addr, "--task-id", "t1"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "Unauthenticated") {
		t.Errorf("got %v", err)
	}
	if err := runGet([]string{"--nodes", addr}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--task-id") {
		t.Errorf("missing flag: %v", err)
	}
}

func TestSecurityFromEnv(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	if n := len(securityFromEnv(get)); n != 0 {
		t.Errorf("nothing set: %d options", n)
	}
	env["TASKRING_TOKEN"] = "x"
	env["TASKRING_CA_FILE"] = "/nonexistent/ca.pem"
	if n := len(securityFromEnv(get)); n != 2 {
		t.Errorf("token and CA: %d options", n)
	}
}
