// Original file: proto/taskring/v1/taskring.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { CancelRequest as _taskring_v1_CancelRequest, CancelRequest__Output as _taskring_v1_CancelRequest__Output } from '../../taskring/v1/CancelRequest';
import type { CancelResponse as _taskring_v1_CancelResponse, CancelResponse__Output as _taskring_v1_CancelResponse__Output } from '../../taskring/v1/CancelResponse';
import type { GetTaskRequest as _taskring_v1_GetTaskRequest, GetTaskRequest__Output as _taskring_v1_GetTaskRequest__Output } from '../../taskring/v1/GetTaskRequest';
import type { GetTaskResponse as _taskring_v1_GetTaskResponse, GetTaskResponse__Output as _taskring_v1_GetTaskResponse__Output } from '../../taskring/v1/GetTaskResponse';
import type { SubmitBatchRequest as _taskring_v1_SubmitBatchRequest, SubmitBatchRequest__Output as _taskring_v1_SubmitBatchRequest__Output } from '../../taskring/v1/SubmitBatchRequest';
import type { SubmitBatchResponse as _taskring_v1_SubmitBatchResponse, SubmitBatchResponse__Output as _taskring_v1_SubmitBatchResponse__Output } from '../../taskring/v1/SubmitBatchResponse';
import type { SubmitRequest as _taskring_v1_SubmitRequest, SubmitRequest__Output as _taskring_v1_SubmitRequest__Output } from '../../taskring/v1/SubmitRequest';
import type { SubmitResponse as _taskring_v1_SubmitResponse, SubmitResponse__Output as _taskring_v1_SubmitResponse__Output } from '../../taskring/v1/SubmitResponse';

export interface TaskServiceClient extends grpc.Client {
  Cancel(argument: _taskring_v1_CancelRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CancelResponse__Output>): grpc.ClientUnaryCall;
  Cancel(argument: _taskring_v1_CancelRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_CancelResponse__Output>): grpc.ClientUnaryCall;
  Cancel(argument: _taskring_v1_CancelRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CancelResponse__Output>): grpc.ClientUnaryCall;
  Cancel(argument: _taskring_v1_CancelRequest, callback: grpc.requestCallback<_taskring_v1_CancelResponse__Output>): grpc.ClientUnaryCall;
  cancel(argument: _taskring_v1_CancelRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CancelResponse__Output>): grpc.ClientUnaryCall;
  cancel(argument: _taskring_v1_CancelRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_CancelResponse__Output>): grpc.ClientUnaryCall;
  cancel(argument: _taskring_v1_CancelRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CancelResponse__Output>): grpc.ClientUnaryCall;
  cancel(argument: _taskring_v1_CancelRequest, callback: grpc.requestCallback<_taskring_v1_CancelResponse__Output>): grpc.ClientUnaryCall;
  
  GetTask(argument: _taskring_v1_GetTaskRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_GetTaskResponse__Output>): grpc.ClientUnaryCall;
  GetTask(argument: _taskring_v1_GetTaskRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_GetTaskResponse__Output>): grpc.ClientUnaryCall;
  GetTask(argument: _taskring_v1_GetTaskRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_GetTaskResponse__Output>): grpc.ClientUnaryCall;
  GetTask(argument: _taskring_v1_GetTaskRequest, callback: grpc.requestCallback<_taskring_v1_GetTaskResponse__Output>): grpc.ClientUnaryCall;
  getTask(argument: _taskring_v1_GetTaskRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_GetTaskResponse__Output>): grpc.ClientUnaryCall;
  getTask(argument: _taskring_v1_GetTaskRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_GetTaskResponse__Output>): grpc.ClientUnaryCall;
  getTask(argument: _taskring_v1_GetTaskRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_GetTaskResponse__Output>): grpc.ClientUnaryCall;
  getTask(argument: _taskring_v1_GetTaskRequest, callback: grpc.requestCallback<_taskring_v1_GetTaskResponse__Output>): grpc.ClientUnaryCall;
  
  Submit(argument: _taskring_v1_SubmitRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_SubmitResponse__Output>): grpc.ClientUnaryCall;
  Submit(argument: _taskring_v1_SubmitRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_SubmitResponse__Output>): grpc.ClientUnaryCall;
  Submit(argument: _taskring_v1_SubmitRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_SubmitResponse__Output>): grpc.ClientUnaryCall;
  Submit(argument: _taskring_v1_SubmitRequest, callback: grpc.requestCallback<_taskring_v1_SubmitResponse__Output>): grpc.ClientUnaryCall;
  submit(argument: _taskring_v1_SubmitRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_SubmitResponse__Output>): grpc.ClientUnaryCall;
  submit(argument: _taskring_v1_SubmitRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_SubmitResponse__Output>): grpc.ClientUnaryCall;
  submit(argument: _taskring_v1_SubmitRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_SubmitResponse__Output>): grpc.ClientUnaryCall;
  submit(argument: _taskring_v1_SubmitRequest, callback: grpc.requestCallback<_taskring_v1_SubmitResponse__Output>): grpc.ClientUnaryCall;
  
  SubmitBatch(argument: _taskring_v1_SubmitBatchRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_SubmitBatchResponse__Output>): grpc.ClientUnaryCall;
  SubmitBatch(argument: _taskring_v1_SubmitBatchRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_SubmitBatchResponse__Output>): grpc.ClientUnaryCall;
  SubmitBatch(argument: _taskring_v1_SubmitBatchRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_SubmitBatchResponse__Output>): grpc.ClientUnaryCall;
  SubmitBatch(argument: _taskring_v1_SubmitBatchRequest, callback: grpc.requestCallback<_taskring_v1_SubmitBatchResponse__Output>): grpc.ClientUnaryCall;
  submitBatch(argument: _taskring_v1_SubmitBatchRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_SubmitBatchResponse__Output>): grpc.ClientUnaryCall;
  submitBatch(argument: _taskring_v1_SubmitBatchRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_SubmitBatchResponse__Output>): grpc.ClientUnaryCall;
  submitBatch(argument: _taskring_v1_SubmitBatchRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_SubmitBatchResponse__Output>): grpc.ClientUnaryCall;
  submitBatch(argument: _taskring_v1_SubmitBatchRequest, callback: grpc.requestCallback<_taskring_v1_SubmitBatchResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface TaskServiceHandlers extends grpc.UntypedServiceImplementation {
  Cancel: grpc.handleUnaryCall<_taskring_v1_CancelRequest__Output, _taskring_v1_CancelResponse>;
  
  GetTask: grpc.handleUnaryCall<_taskring_v1_GetTaskRequest__Output, _taskring_v1_GetTaskResponse>;
  
  Submit: grpc.handleUnaryCall<_taskring_v1_SubmitRequest__Output, _taskring_v1_SubmitResponse>;
  
  SubmitBatch: grpc.handleUnaryCall<_taskring_v1_SubmitBatchRequest__Output, _taskring_v1_SubmitBatchResponse>;
  
}

export interface TaskServiceDefinition extends grpc.ServiceDefinition {
  Cancel: MethodDefinition<_taskring_v1_CancelRequest, _taskring_v1_CancelResponse, _taskring_v1_CancelRequest__Output, _taskring_v1_CancelResponse__Output>
  GetTask: MethodDefinition<_taskring_v1_GetTaskRequest, _taskring_v1_GetTaskResponse, _taskring_v1_GetTaskRequest__Output, _taskring_v1_GetTaskResponse__Output>
  Submit: MethodDefinition<_taskring_v1_SubmitRequest, _taskring_v1_SubmitResponse, _taskring_v1_SubmitRequest__Output, _taskring_v1_SubmitResponse__Output>
  SubmitBatch: MethodDefinition<_taskring_v1_SubmitBatchRequest, _taskring_v1_SubmitBatchResponse, _taskring_v1_SubmitBatchRequest__Output, _taskring_v1_SubmitBatchResponse__Output>
}
