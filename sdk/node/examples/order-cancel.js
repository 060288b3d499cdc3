'use strict';
// The order-cancel task of the design: when an order is placed, submit
// `cancel_order` due in 30 minutes; when it runs, the handler cancels the order
// unless it has been paid by then.
//
//   node examples/order-cancel.js executor   # runs the handler (registers in ZooKeeper)
//   node examples/order-cancel.js submit     # submits the task for order 42
//
// TASKRING_NODES (default 127.0.0.1:7070) lists dispatcher nodes, comma-separated;
// TASKRING_ZK (default 127.0.0.1:22181/taskring) is ZooKeeper with the cluster's chroot.
const { Client, Executor, NonRetryableError } = require('@taskring/sdk');

const NODES = process.env.TASKRING_NODES ?? '127.0.0.1:7070';
const ZK = process.env.TASKRING_ZK ?? '127.0.0.1:22181/taskring';

// Stands in for the shop's order service.
const orders = new Map([[42, { id: 42, status: 'placed' }]]);
async function findOrder(id, signal) {
  signal.throwIfAborted();
  return orders.get(id);
}

async function submit() {
  const client = new Client({ nodes: NODES });
  try {
    const receipt = await client.submit({
      namespace: 'shop',
      taskType: 'cancel_order',
      payload: { order_id: 42 },
      taskId: 'cancel-order-42', // our own id: a retried submit is a duplicate, not a second task
      delayMs: 30 * 60 * 1000,
      maxRetries: 5,
    });
    console.log(`submitted ${receipt.taskId}, due at ${receipt.dueAt?.toISOString()}`);
    const info = await client.get(receipt.taskId);
    console.log(`state: ${info.state}, history: ${info.history.map((e) => e.state).join(' -> ')}`);
  } finally {
    client.close();
  }
}

async function runExecutor() {
  const executor = new Executor({ namespace: 'shop', zk: ZK, maxInFlight: 16 });
  executor.handle('cancel_order', async (ctx) => {
    const order = await findOrder(ctx.payload.order_id, ctx.signal);
    if (order === undefined) throw new NonRetryableError(`order ${ctx.payload.order_id} does not exist`);
    if (order.status === 'paid') return; // paid in time: nothing to cancel
    order.status = 'cancelled'; // idempotent: a second delivery of the same attempt changes nothing
    console.log(`order ${order.id} cancelled (task ${ctx.taskId}, attempt ${ctx.attempt})`);
  });
  await executor.start();
  console.log(`executor at ${executor.address}, registered as ${executor.registrationPath}`);
  const stop = () => executor.stop(10_000).then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

const mode = process.argv[2];
(mode === 'submit' ? submit() : mode === 'executor' ? runExecutor() : Promise.reject(new Error('usage: order-cancel.js submit|executor')))
  .catch((e) => {
    console.error(e.message);
    process.exitCode = 1;
  });
