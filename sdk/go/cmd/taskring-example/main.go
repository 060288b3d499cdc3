// Command taskring-example is the README's example: the order-cancel task of
// the design. `submit` asks for order 42 to be cancelled in 30 minutes unless
// it is paid by then; `executor` runs the handler that checks and cancels.
//
//	taskring-example submit   --nodes 127.0.0.1:7070
//	taskring-example executor --zk 127.0.0.1:22181/taskring
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	taskring "github.com/taskring/taskring/sdk/go"
)

// CancelOrder is the payload of a cancel_order task.
type CancelOrder struct {
	OrderID int64 `json:"order_id"`
}

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: taskring-example submit|executor [flags]")
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	nodes := fs.String("nodes", "127.0.0.1:7070", "dispatchers, host:port,...")
	zk := fs.String("zk", "127.0.0.1:22181/taskring", "ZooKeeper connect string with chroot")
	_ = fs.Parse(os.Args[2:])
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var err error
	switch os.Args[1] {
	case "submit":
		err = submit(ctx, strings.Split(*nodes, ","))
	case "executor":
		err = serve(ctx, *zk, newOrders())
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		log.Fatal(err)
	}
}

func submit(ctx context.Context, nodes []string) error {
	client, err := taskring.NewClient(taskring.WithNodes(nodes...), taskring.WithTimeout(5*time.Second))
	if err != nil {
		return err
	}
	defer client.Close()
	res, err := client.Submit(ctx, taskring.TaskSpec{
		Namespace:  "shop",
		TaskType:   "cancel_order",
		Payload:    CancelOrder{OrderID: 42},
		TaskID:     "cancel-order-42", // idempotent: a retried submit is reported as a duplicate
		Delay:      30 * time.Minute,
		Timeout:    10 * time.Second,
		MaxRetries: taskring.Retries(5),
	})
	var bad *taskring.InvalidArgumentError
	if errors.As(err, &bad) {
		return fmt.Errorf("the server refused field %s: %s", bad.Field, bad.Problem)
	}
	if err != nil {
		return err
	}
	fmt.Printf("task %s %s, due at %s (duplicate: %v)\n", res.TaskID, res.State, res.DueAt.Format(time.RFC3339), res.Duplicate)
	return nil
}

func serve(ctx context.Context, zk string, orders *orders) error {
	ex, err := taskring.NewExecutor("shop", taskring.WithZooKeeper(zk), taskring.WithMaxInFlight(16))
	if err != nil {
		return err
	}
	err = ex.Handle("cancel_order", func(ctx context.Context, t *taskring.Task) error {
		var p CancelOrder
		if err := t.Decode(&p); err != nil {
			return taskring.NonRetryable(err) // a payload we cannot read will never work
		}
		paid, err := orders.IsPaid(ctx, p.OrderID)
		if errors.Is(err, errNoSuchOrder) {
			return taskring.NonRetryable(err)
		}
		if err != nil {
			return err // retried after the backoff
		}
		if paid {
			return nil // paid in time: nothing to do
		}
		return orders.Cancel(ctx, p.OrderID) // idempotent on the order id
	})
	if err != nil {
		return err
	}
	return ex.Serve(ctx) // start, register, serve until SIGTERM, then stop gracefully
}
