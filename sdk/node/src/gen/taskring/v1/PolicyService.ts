// Original file: proto/taskring/v1/taskring.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { DeleteTypePolicyRequest as _taskring_v1_DeleteTypePolicyRequest, DeleteTypePolicyRequest__Output as _taskring_v1_DeleteTypePolicyRequest__Output } from '../../taskring/v1/DeleteTypePolicyRequest';
import type { ListTypePoliciesRequest as _taskring_v1_ListTypePoliciesRequest, ListTypePoliciesRequest__Output as _taskring_v1_ListTypePoliciesRequest__Output } from '../../taskring/v1/ListTypePoliciesRequest';
import type { ListTypePoliciesResponse as _taskring_v1_ListTypePoliciesResponse, ListTypePoliciesResponse__Output as _taskring_v1_ListTypePoliciesResponse__Output } from '../../taskring/v1/ListTypePoliciesResponse';
import type { PutTypePolicyRequest as _taskring_v1_PutTypePolicyRequest, PutTypePolicyRequest__Output as _taskring_v1_PutTypePolicyRequest__Output } from '../../taskring/v1/PutTypePolicyRequest';
import type { TypePolicy as _taskring_v1_TypePolicy, TypePolicy__Output as _taskring_v1_TypePolicy__Output } from '../../taskring/v1/TypePolicy';
import type { TypePolicyRef as _taskring_v1_TypePolicyRef, TypePolicyRef__Output as _taskring_v1_TypePolicyRef__Output } from '../../taskring/v1/TypePolicyRef';

export interface PolicyServiceClient extends grpc.Client {
  DeleteTypePolicy(argument: _taskring_v1_DeleteTypePolicyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  DeleteTypePolicy(argument: _taskring_v1_DeleteTypePolicyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  DeleteTypePolicy(argument: _taskring_v1_DeleteTypePolicyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  DeleteTypePolicy(argument: _taskring_v1_DeleteTypePolicyRequest, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  deleteTypePolicy(argument: _taskring_v1_DeleteTypePolicyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  deleteTypePolicy(argument: _taskring_v1_DeleteTypePolicyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  deleteTypePolicy(argument: _taskring_v1_DeleteTypePolicyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  deleteTypePolicy(argument: _taskring_v1_DeleteTypePolicyRequest, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  
  /**
   * Put and Delete are audited (policies.put, policies.delete) and apply on every node within
   * TASKRING_POLICIES_RELOAD_MS (at once on the node that took the call).
   */
  GetTypePolicy(argument: _taskring_v1_TypePolicyRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  GetTypePolicy(argument: _taskring_v1_TypePolicyRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  GetTypePolicy(argument: _taskring_v1_TypePolicyRef, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  GetTypePolicy(argument: _taskring_v1_TypePolicyRef, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  /**
   * Put and Delete are audited (policies.put, policies.delete) and apply on every node within
   * TASKRING_POLICIES_RELOAD_MS (at once on the node that took the call).
   */
  getTypePolicy(argument: _taskring_v1_TypePolicyRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  getTypePolicy(argument: _taskring_v1_TypePolicyRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  getTypePolicy(argument: _taskring_v1_TypePolicyRef, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  getTypePolicy(argument: _taskring_v1_TypePolicyRef, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  
  ListTypePolicies(argument: _taskring_v1_ListTypePoliciesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_ListTypePoliciesResponse__Output>): grpc.ClientUnaryCall;
  ListTypePolicies(argument: _taskring_v1_ListTypePoliciesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_ListTypePoliciesResponse__Output>): grpc.ClientUnaryCall;
  ListTypePolicies(argument: _taskring_v1_ListTypePoliciesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_ListTypePoliciesResponse__Output>): grpc.ClientUnaryCall;
  ListTypePolicies(argument: _taskring_v1_ListTypePoliciesRequest, callback: grpc.requestCallback<_taskring_v1_ListTypePoliciesResponse__Output>): grpc.ClientUnaryCall;
  listTypePolicies(argument: _taskring_v1_ListTypePoliciesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_ListTypePoliciesResponse__Output>): grpc.ClientUnaryCall;
  listTypePolicies(argument: _taskring_v1_ListTypePoliciesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_ListTypePoliciesResponse__Output>): grpc.ClientUnaryCall;
  listTypePolicies(argument: _taskring_v1_ListTypePoliciesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_ListTypePoliciesResponse__Output>): grpc.ClientUnaryCall;
  listTypePolicies(argument: _taskring_v1_ListTypePoliciesRequest, callback: grpc.requestCallback<_taskring_v1_ListTypePoliciesResponse__Output>): grpc.ClientUnaryCall;
  
  PutTypePolicy(argument: _taskring_v1_PutTypePolicyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  PutTypePolicy(argument: _taskring_v1_PutTypePolicyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  PutTypePolicy(argument: _taskring_v1_PutTypePolicyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  PutTypePolicy(argument: _taskring_v1_PutTypePolicyRequest, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  putTypePolicy(argument: _taskring_v1_PutTypePolicyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  putTypePolicy(argument: _taskring_v1_PutTypePolicyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  putTypePolicy(argument: _taskring_v1_PutTypePolicyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  putTypePolicy(argument: _taskring_v1_PutTypePolicyRequest, callback: grpc.requestCallback<_taskring_v1_TypePolicy__Output>): grpc.ClientUnaryCall;
  
}

export interface PolicyServiceHandlers extends grpc.UntypedServiceImplementation {
  DeleteTypePolicy: grpc.handleUnaryCall<_taskring_v1_DeleteTypePolicyRequest__Output, _taskring_v1_TypePolicy>;
  
  /**
   * Put and Delete are audited (policies.put, policies.delete) and apply on every node within
   * TASKRING_POLICIES_RELOAD_MS (at once on the node that took the call).
   */
  GetTypePolicy: grpc.handleUnaryCall<_taskring_v1_TypePolicyRef__Output, _taskring_v1_TypePolicy>;
  
  ListTypePolicies: grpc.handleUnaryCall<_taskring_v1_ListTypePoliciesRequest__Output, _taskring_v1_ListTypePoliciesResponse>;
  
  PutTypePolicy: grpc.handleUnaryCall<_taskring_v1_PutTypePolicyRequest__Output, _taskring_v1_TypePolicy>;
  
}

export interface PolicyServiceDefinition extends grpc.ServiceDefinition {
  DeleteTypePolicy: MethodDefinition<_taskring_v1_DeleteTypePolicyRequest, _taskring_v1_TypePolicy, _taskring_v1_DeleteTypePolicyRequest__Output, _taskring_v1_TypePolicy__Output>
  GetTypePolicy: MethodDefinition<_taskring_v1_TypePolicyRef, _taskring_v1_TypePolicy, _taskring_v1_TypePolicyRef__Output, _taskring_v1_TypePolicy__Output>
  ListTypePolicies: MethodDefinition<_taskring_v1_ListTypePoliciesRequest, _taskring_v1_ListTypePoliciesResponse, _taskring_v1_ListTypePoliciesRequest__Output, _taskring_v1_ListTypePoliciesResponse__Output>
  PutTypePolicy: MethodDefinition<_taskring_v1_PutTypePolicyRequest, _taskring_v1_TypePolicy, _taskring_v1_PutTypePolicyRequest__Output, _taskring_v1_TypePolicy__Output>
}
