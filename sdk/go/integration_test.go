package taskring

// Integration tests against the real local stack, skipped unless asked for:
//
//	TASKRING_IT_ZK=127.0.0.1:22181     registration in a private chroot of a real ZooKeeper
//	TASKRING_IT_NODES=127.0.0.1:7070   server-checked validation vectors against a dispatcher

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

func itZK(t *testing.T) (servers string, conn *zk.Conn, chroot string) {
	t.Helper()
	servers = os.Getenv("TASKRING_IT_ZK")
	if servers == "" {
		t.Skip("set TASKRING_IT_ZK=host:port to run against a real ZooKeeper")
	}
	conn, _, err := zk.Connect(strings.Split(servers, ","), 10*time.Second, zk.WithLogger(zkLog{quiet}))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	chroot = "/taskring-go-it-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		deleteTree(conn, chroot)
		conn.Close()
	})
	return servers, conn, chroot
}

func deleteTree(c *zk.Conn, p string) {
	children, _, err := c.Children(p)
	if err != nil {
		return
	}
	for _, ch := range children {
		deleteTree(c, p+"/"+ch)
	}
	_ = c.Delete(p, -1)
}

func TestIntegrationRegistration(t *testing.T) {
	servers, conn, chroot := itZK(t)
	ex, err := NewExecutor("shop", WithZooKeeper(servers+chroot), WithInstanceID("it-1"), WithMaxInFlight(7), WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []string{"send_email", "cancel_order"} {
		if err := ex.Handle(tt, func(context.Context, *Task) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := ex.Start(ctx); err != nil { // the chroot does not exist yet: Start creates it
		t.Fatal(err)
	}
	path := chroot + "/executors/shop/it-1"
	data, stat, err := conn.Get(path)
	if err != nil {
		_ = ex.Stop(ctx)
		t.Fatalf("znode %s: %v", path, err)
	}
	want := `{"address":"` + ex.Address() + `","namespace":"shop","task_types":["cancel_order","send_email"],"max_in_flight":7,"pid":` +
		strconv.Itoa(os.Getpid()) + `}`
	if string(data) != want {
		t.Errorf("znode data:\n got  %s\n want %s", data, want)
	}
	if stat.EphemeralOwner == 0 {
		t.Error("the znode is not ephemeral")
	}
	if ex.RegistrationPath() != "/executors/shop/it-1" {
		t.Errorf("RegistrationPath %q", ex.RegistrationPath())
	}
	if err := ex.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := conn.Exists(path); err != nil || ok {
		t.Errorf("after Stop the znode exists=%v (err %v)", ok, err)
	}
}

func TestIntegrationReplacesAStaleZnode(t *testing.T) {
	servers, conn, chroot := itZK(t)
	// Another session (a crashed instance with the same id) still holds the znode.
	stale, _, err := zk.Connect(strings.Split(servers, ","), 10*time.Second, zk.WithLogger(zkLog{quiet}))
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close()
	path := chroot + "/executors/shop/it-2"
	for _, p := range []string{chroot, chroot + "/executors", chroot + "/executors/shop"} {
		_, _ = stale.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
	}
	if _, err := stale.Create(path, []byte(`{"old":true}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	ex, _ := NewExecutor("shop", WithZooKeeper(servers+chroot), WithInstanceID("it-2"), WithLogger(quiet))
	_ = ex.Handle("t", func(context.Context, *Task) error { return nil })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := ex.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer ex.Stop(ctx)
	data, stat, err := conn.Get(path)
	if err != nil || bytes.Contains(data, []byte("old")) || stat.EphemeralOwner == stale.SessionID() {
		t.Errorf("the stale znode was not replaced: %s (err %v)", data, err)
	}
}

// TestIntegrationServerValidation sends the server-checked cases of
// sdk/vectors/validation.json as raw SubmitRequests (no client-side checks).
func TestIntegrationServerValidation(t *testing.T) {
	nodes := os.Getenv("TASKRING_IT_NODES")
	if nodes == "" {
		t.Skip("set TASKRING_IT_NODES=host:port to run against a dispatcher")
	}
	var doc struct {
		Cases []struct {
			Name       string                     `json:"name"`
			CheckedBy  string                     `json:"checked_by"`
			Task       map[string]json.RawMessage `json:"task"`
			ErrorField string                     `json:"error_field"`
			OK         bool                       `json:"ok"`
		} `json:"cases"`
	}
	loadVectors(t, "validation.json", &doc)
	cc, err := grpc.NewClient(strings.Split(nodes, ",")[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	stub := pb.NewTaskServiceClient(cc)
	for _, c := range doc.Cases {
		if c.CheckedBy != "server" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			if raw, ok := c.Task["payload_size_bytes"]; ok {
				var n int
				_ = json.Unmarshal(raw, &n)
				text, _ := json.Marshal(`{"x":"` + strings.Repeat("a", n-8) + `"}`)
				c.Task["payloadJson"] = text
				delete(c.Task, "payload_size_bytes")
			}
			raw, _ := json.Marshal(c.Task)
			var task pb.Task
			if err := protojson.Unmarshal(raw, &task); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := stub.Submit(ctx, &pb.SubmitRequest{Task: &task})
			if c.OK {
				if err != nil {
					t.Fatalf("want accepted, got %v", err)
				}
				return
			}
			st, _ := status.FromError(err)
			if st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), c.ErrorField+": ") {
				t.Fatalf("want INVALID_ARGUMENT %q, got %v", c.ErrorField+": ...", err)
			}
			if ia, ok := fromRPC(err).(*InvalidArgumentError); !ok || ia.Field != c.ErrorField {
				t.Errorf("the SDK parsed field %v", fromRPC(err))
			}
		})
	}
}
