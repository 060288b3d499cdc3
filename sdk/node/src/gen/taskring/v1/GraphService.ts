// Original file: proto/taskring/v1/taskring.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { GetGraphRequest as _taskring_v1_GetGraphRequest, GetGraphRequest__Output as _taskring_v1_GetGraphRequest__Output } from '../../taskring/v1/GetGraphRequest';
import type { GetGraphResponse as _taskring_v1_GetGraphResponse, GetGraphResponse__Output as _taskring_v1_GetGraphResponse__Output } from '../../taskring/v1/GetGraphResponse';
import type { SubmitGraphRequest as _taskring_v1_SubmitGraphRequest, SubmitGraphRequest__Output as _taskring_v1_SubmitGraphRequest__Output } from '../../taskring/v1/SubmitGraphRequest';
import type { SubmitGraphResponse as _taskring_v1_SubmitGraphResponse, SubmitGraphResponse__Output as _taskring_v1_SubmitGraphResponse__Output } from '../../taskring/v1/SubmitGraphResponse';

export interface GraphServiceClient extends grpc.Client {
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
  GetGraph: grpc.handleUnaryCall<_taskring_v1_GetGraphRequest__Output, _taskring_v1_GetGraphResponse>;
  
  /**
   * Validated whole before anything is written; refused naming the field
   * (tasks[3].depends_on[0], ...). Idempotent by graph_id.
   */
  SubmitGraph: grpc.handleUnaryCall<_taskring_v1_SubmitGraphRequest__Output, _taskring_v1_SubmitGraphResponse>;
  
}

export interface GraphServiceDefinition extends grpc.ServiceDefinition {
  GetGraph: MethodDefinition<_taskring_v1_GetGraphRequest, _taskring_v1_GetGraphResponse, _taskring_v1_GetGraphRequest__Output, _taskring_v1_GetGraphResponse__Output>
  SubmitGraph: MethodDefinition<_taskring_v1_SubmitGraphRequest, _taskring_v1_SubmitGraphResponse, _taskring_v1_SubmitGraphRequest__Output, _taskring_v1_SubmitGraphResponse__Output>
}
