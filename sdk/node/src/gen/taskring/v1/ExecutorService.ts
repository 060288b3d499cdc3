// Original file: proto/taskring/v1/taskring.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ExecuteRequest as _taskring_v1_ExecuteRequest, ExecuteRequest__Output as _taskring_v1_ExecuteRequest__Output } from '../../taskring/v1/ExecuteRequest';
import type { ExecuteResponse as _taskring_v1_ExecuteResponse, ExecuteResponse__Output as _taskring_v1_ExecuteResponse__Output } from '../../taskring/v1/ExecuteResponse';

export interface ExecutorServiceClient extends grpc.Client {
  /**
   * A batch of due tasks; returns once every task in it has an outcome.
   */
  Execute(argument: _taskring_v1_ExecuteRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_ExecuteResponse__Output>): grpc.ClientUnaryCall;
  Execute(argument: _taskring_v1_ExecuteRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_ExecuteResponse__Output>): grpc.ClientUnaryCall;
  Execute(argument: _taskring_v1_ExecuteRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_ExecuteResponse__Output>): grpc.ClientUnaryCall;
  Execute(argument: _taskring_v1_ExecuteRequest, callback: grpc.requestCallback<_taskring_v1_ExecuteResponse__Output>): grpc.ClientUnaryCall;
  /**
   * A batch of due tasks; returns once every task in it has an outcome.
   */
  execute(argument: _taskring_v1_ExecuteRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_ExecuteResponse__Output>): grpc.ClientUnaryCall;
  execute(argument: _taskring_v1_ExecuteRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_ExecuteResponse__Output>): grpc.ClientUnaryCall;
  execute(argument: _taskring_v1_ExecuteRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_ExecuteResponse__Output>): grpc.ClientUnaryCall;
  execute(argument: _taskring_v1_ExecuteRequest, callback: grpc.requestCallback<_taskring_v1_ExecuteResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The same work on one long-lived stream per dispatcher node and executor: batches of
   * deliveries down, outcomes up as each task finishes (several to a message, any order,
   * one per delivery). A call costs both sides several times what a message on an open
   * stream does, and a task that finishes early is not held back by a slow one sent
   * beside it. An executor that does not implement it answers UNIMPLEMENTED, and the
   * dispatcher uses Execute.
   */
  Work(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_taskring_v1_ExecuteRequest, _taskring_v1_ExecuteResponse__Output>;
  Work(options?: grpc.CallOptions): grpc.ClientDuplexStream<_taskring_v1_ExecuteRequest, _taskring_v1_ExecuteResponse__Output>;
  /**
   * The same work on one long-lived stream per dispatcher node and executor: batches of
   * deliveries down, outcomes up as each task finishes (several to a message, any order,
   * one per delivery). A call costs both sides several times what a message on an open
   * stream does, and a task that finishes early is not held back by a slow one sent
   * beside it. An executor that does not implement it answers UNIMPLEMENTED, and the
   * dispatcher uses Execute.
   */
  work(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_taskring_v1_ExecuteRequest, _taskring_v1_ExecuteResponse__Output>;
  work(options?: grpc.CallOptions): grpc.ClientDuplexStream<_taskring_v1_ExecuteRequest, _taskring_v1_ExecuteResponse__Output>;
  
}

export interface ExecutorServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * A batch of due tasks; returns once every task in it has an outcome.
   */
  Execute: grpc.handleUnaryCall<_taskring_v1_ExecuteRequest__Output, _taskring_v1_ExecuteResponse>;
  
  /**
   * The same work on one long-lived stream per dispatcher node and executor: batches of
   * deliveries down, outcomes up as each task finishes (several to a message, any order,
   * one per delivery). A call costs both sides several times what a message on an open
   * stream does, and a task that finishes early is not held back by a slow one sent
   * beside it. An executor that does not implement it answers UNIMPLEMENTED, and the
   * dispatcher uses Execute.
   */
  Work: grpc.handleBidiStreamingCall<_taskring_v1_ExecuteRequest__Output, _taskring_v1_ExecuteResponse>;
  
}

export interface ExecutorServiceDefinition extends grpc.ServiceDefinition {
  Execute: MethodDefinition<_taskring_v1_ExecuteRequest, _taskring_v1_ExecuteResponse, _taskring_v1_ExecuteRequest__Output, _taskring_v1_ExecuteResponse__Output>
  Work: MethodDefinition<_taskring_v1_ExecuteRequest, _taskring_v1_ExecuteResponse, _taskring_v1_ExecuteRequest__Output, _taskring_v1_ExecuteResponse__Output>
}
