// Original file: proto/taskring/v1/taskring.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AddGraphTasksRequest as _taskring_v1_AddGraphTasksRequest, AddGraphTasksRequest__Output as _taskring_v1_AddGraphTasksRequest__Output } from '../../taskring/v1/AddGraphTasksRequest';
import type { AddGraphTasksResponse as _taskring_v1_AddGraphTasksResponse, AddGraphTasksResponse__Output as _taskring_v1_AddGraphTasksResponse__Output } from '../../taskring/v1/AddGraphTasksResponse';
import type { CancelGraphRequest as _taskring_v1_CancelGraphRequest, CancelGraphRequest__Output as _taskring_v1_CancelGraphRequest__Output } from '../../taskring/v1/CancelGraphRequest';
import type { CancelGraphResponse as _taskring_v1_CancelGraphResponse, CancelGraphResponse__Output as _taskring_v1_CancelGraphResponse__Output } from '../../taskring/v1/CancelGraphResponse';
import type { GetGraphRequest as _taskring_v1_GetGraphRequest, GetGraphRequest__Output as _taskring_v1_GetGraphRequest__Output } from '../../taskring/v1/GetGraphRequest';
import type { GetGraphResponse as _taskring_v1_GetGraphResponse, GetGraphResponse__Output as _taskring_v1_GetGraphResponse__Output } from '../../taskring/v1/GetGraphResponse';
import type { SubmitGraphRequest as _taskring_v1_SubmitGraphRequest, SubmitGraphRequest__Output as _taskring_v1_SubmitGraphRequest__Output } from '../../taskring/v1/SubmitGraphRequest';
import type { SubmitGraphResponse as _taskring_v1_SubmitGraphResponse, SubmitGraphResponse__Output as _taskring_v1_SubmitGraphResponse__Output } from '../../taskring/v1/SubmitGraphResponse';

export interface GraphServiceClient extends grpc.Client {
  /**
   * Called by a running task of the graph (its handler's ctx.add_tasks): new tasks that run
   * once it has ended (it is an implicit parent of each, with on_failure skip) and after the
   * parents they name; also_before's waiting tasks also wait for them. Idempotent by key: a
   * retried attempt adding the same keys adds nothing twice.
   */
  AddGraphTasks(argument: _taskring_v1_AddGraphTasksRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_AddGraphTasksResponse__Output>): grpc.ClientUnaryCall;
  AddGraphTasks(argument: _taskring_v1_AddGraphTasksRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_AddGraphTasksResponse__Output>): grpc.ClientUnaryCall;
  AddGraphTasks(argument: _taskring_v1_AddGraphTasksRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_AddGraphTasksResponse__Output>): grpc.ClientUnaryCall;
  AddGraphTasks(argument: _taskring_v1_AddGraphTasksRequest, callback: grpc.requestCallback<_taskring_v1_AddGraphTasksResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Called by a running task of the graph (its handler's ctx.add_tasks): new tasks that run
   * once it has ended (it is an implicit parent of each, with on_failure skip) and after the
   * parents they name; also_before's waiting tasks also wait for them. Idempotent by key: a
   * retried attempt adding the same keys adds nothing twice.
   */
  addGraphTasks(argument: _taskring_v1_AddGraphTasksRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_AddGraphTasksResponse__Output>): grpc.ClientUnaryCall;
  addGraphTasks(argument: _taskring_v1_AddGraphTasksRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_AddGraphTasksResponse__Output>): grpc.ClientUnaryCall;
  addGraphTasks(argument: _taskring_v1_AddGraphTasksRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_AddGraphTasksResponse__Output>): grpc.ClientUnaryCall;
  addGraphTasks(argument: _taskring_v1_AddGraphTasksRequest, callback: grpc.requestCallback<_taskring_v1_AddGraphTasksResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Every task of the graph that has not ended is cancelled, or, running, left to finish
   * without a retry. (Cancel of one task of a graph cancels what depends on it.)
   */
  CancelGraph(argument: _taskring_v1_CancelGraphRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CancelGraphResponse__Output>): grpc.ClientUnaryCall;
  CancelGraph(argument: _taskring_v1_CancelGraphRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_CancelGraphResponse__Output>): grpc.ClientUnaryCall;
  CancelGraph(argument: _taskring_v1_CancelGraphRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CancelGraphResponse__Output>): grpc.ClientUnaryCall;
  CancelGraph(argument: _taskring_v1_CancelGraphRequest, callback: grpc.requestCallback<_taskring_v1_CancelGraphResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Every task of the graph that has not ended is cancelled, or, running, left to finish
   * without a retry. (Cancel of one task of a graph cancels what depends on it.)
   */
  cancelGraph(argument: _taskring_v1_CancelGraphRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CancelGraphResponse__Output>): grpc.ClientUnaryCall;
  cancelGraph(argument: _taskring_v1_CancelGraphRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_CancelGraphResponse__Output>): grpc.ClientUnaryCall;
  cancelGraph(argument: _taskring_v1_CancelGraphRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CancelGraphResponse__Output>): grpc.ClientUnaryCall;
  cancelGraph(argument: _taskring_v1_CancelGraphRequest, callback: grpc.requestCallback<_taskring_v1_CancelGraphResponse__Output>): grpc.ClientUnaryCall;
  
  GetGraph(argument: _taskring_v1_GetGraphRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_GetGraphResponse__Output>): grpc.ClientUnaryCall;
  GetGraph(argument: _taskring_v1_GetGraphRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_GetGraphResponse__Output>): grpc.ClientUnaryCall;
  GetGraph(argument: _taskring_v1_GetGraphRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_GetGraphResponse__Output>): grpc.ClientUnaryCall;
  GetGraph(argument: _taskring_v1_GetGraphRequest, callback: grpc.requestCallback<_taskring_v1_GetGraphResponse__Output>): grpc.ClientUnaryCall;
  getGraph(argument: _taskring_v1_GetGraphRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_GetGraphResponse__Output>): grpc.ClientUnaryCall;
  getGraph(argument: _taskring_v1_GetGraphRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_GetGraphResponse__Output>): grpc.ClientUnaryCall;
  getGraph(argument: _taskring_v1_GetGraphRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_GetGraphResponse__Output>): grpc.ClientUnaryCall;
  getGraph(argument: _taskring_v1_GetGraphRequest, callback: grpc.requestCallback<_taskring_v1_GetGraphResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Validated whole before anything is written; refused naming the field
   * (tasks[3].depends_on[0], ...). Idempotent by graph_id.
   */
  SubmitGraph(argument: _taskring_v1_SubmitGraphRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_SubmitGraphResponse__Output>): grpc.ClientUnaryCall;
  SubmitGraph(argument: _taskring_v1_SubmitGraphRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_SubmitGraphResponse__Output>): grpc.ClientUnaryCall;
  SubmitGraph(argument: _taskring_v1_SubmitGraphRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_SubmitGraphResponse__Output>): grpc.ClientUnaryCall;
  SubmitGraph(argument: _taskring_v1_SubmitGraphRequest, callback: grpc.requestCallback<_taskring_v1_SubmitGraphResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Validated whole before anything is written; refused naming the field
   * (tasks[3].depends_on[0], ...). Idempotent by graph_id.
   */
  submitGraph(argument: _taskring_v1_SubmitGraphRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_SubmitGraphResponse__Output>): grpc.ClientUnaryCall;
  submitGraph(argument: _taskring_v1_SubmitGraphRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_SubmitGraphResponse__Output>): grpc.ClientUnaryCall;
  submitGraph(argument: _taskring_v1_SubmitGraphRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_SubmitGraphResponse__Output>): grpc.ClientUnaryCall;
  submitGraph(argument: _taskring_v1_SubmitGraphRequest, callback: grpc.requestCallback<_taskring_v1_SubmitGraphResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface GraphServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Called by a running task of the graph (its handler's ctx.add_tasks): new tasks that run
   * once it has ended (it is an implicit parent of each, with on_failure skip) and after the
   * parents they name; also_before's waiting tasks also wait for them. Idempotent by key: a
   * retried attempt adding the same keys adds nothing twice.
   */
  AddGraphTasks: grpc.handleUnaryCall<_taskring_v1_AddGraphTasksRequest__Output, _taskring_v1_AddGraphTasksResponse>;
  
  /**
   * Every task of the graph that has not ended is cancelled, or, running, left to finish
   * without a retry. (Cancel of one task of a graph cancels what depends on it.)
   */
  CancelGraph: grpc.handleUnaryCall<_taskring_v1_CancelGraphRequest__Output, _taskring_v1_CancelGraphResponse>;
  
  GetGraph: grpc.handleUnaryCall<_taskring_v1_GetGraphRequest__Output, _taskring_v1_GetGraphResponse>;
  
  /**
   * Validated whole before anything is written; refused naming the field
   * (tasks[3].depends_on[0], ...). Idempotent by graph_id.
   */
  SubmitGraph: grpc.handleUnaryCall<_taskring_v1_SubmitGraphRequest__Output, _taskring_v1_SubmitGraphResponse>;
  
}

export interface GraphServiceDefinition extends grpc.ServiceDefinition {
  AddGraphTasks: MethodDefinition<_taskring_v1_AddGraphTasksRequest, _taskring_v1_AddGraphTasksResponse, _taskring_v1_AddGraphTasksRequest__Output, _taskring_v1_AddGraphTasksResponse__Output>
  CancelGraph: MethodDefinition<_taskring_v1_CancelGraphRequest, _taskring_v1_CancelGraphResponse, _taskring_v1_CancelGraphRequest__Output, _taskring_v1_CancelGraphResponse__Output>
  GetGraph: MethodDefinition<_taskring_v1_GetGraphRequest, _taskring_v1_GetGraphResponse, _taskring_v1_GetGraphRequest__Output, _taskring_v1_GetGraphResponse__Output>
  SubmitGraph: MethodDefinition<_taskring_v1_SubmitGraphRequest, _taskring_v1_SubmitGraphResponse, _taskring_v1_SubmitGraphRequest__Output, _taskring_v1_SubmitGraphResponse__Output>
}
