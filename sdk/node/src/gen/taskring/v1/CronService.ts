// Original file: proto/taskring/v1/taskring.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { CronRule as _taskring_v1_CronRule, CronRule__Output as _taskring_v1_CronRule__Output } from '../../taskring/v1/CronRule';
import type { CronRuleRef as _taskring_v1_CronRuleRef, CronRuleRef__Output as _taskring_v1_CronRuleRef__Output } from '../../taskring/v1/CronRuleRef';
import type { ListCronRulesRequest as _taskring_v1_ListCronRulesRequest, ListCronRulesRequest__Output as _taskring_v1_ListCronRulesRequest__Output } from '../../taskring/v1/ListCronRulesRequest';
import type { ListCronRulesResponse as _taskring_v1_ListCronRulesResponse, ListCronRulesResponse__Output as _taskring_v1_ListCronRulesResponse__Output } from '../../taskring/v1/ListCronRulesResponse';
import type { PutCronRuleRequest as _taskring_v1_PutCronRuleRequest, PutCronRuleRequest__Output as _taskring_v1_PutCronRuleRequest__Output } from '../../taskring/v1/PutCronRuleRequest';
import type { PutCronRuleResponse as _taskring_v1_PutCronRuleResponse, PutCronRuleResponse__Output as _taskring_v1_PutCronRuleResponse__Output } from '../../taskring/v1/PutCronRuleResponse';

export interface CronServiceClient extends grpc.Client {
  /**
   * Create fails with ALREADY_EXISTS, Update with NOT_FOUND; both validate the whole rule first.
   */
  CreateCronRule(argument: _taskring_v1_PutCronRuleRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_PutCronRuleResponse__Output>): grpc.ClientUnaryCall;
  CreateCronRule(argument: _taskring_v1_PutCronRuleRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_PutCronRuleResponse__Output>): grpc.ClientUnaryCall;
  CreateCronRule(argument: _taskring_v1_PutCronRuleRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_PutCronRuleResponse__Output>): grpc.ClientUnaryCall;
  CreateCronRule(argument: _taskring_v1_PutCronRuleRequest, callback: grpc.requestCallback<_taskring_v1_PutCronRuleResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Create fails with ALREADY_EXISTS, Update with NOT_FOUND; both validate the whole rule first.
   */
  createCronRule(argument: _taskring_v1_PutCronRuleRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_PutCronRuleResponse__Output>): grpc.ClientUnaryCall;
  createCronRule(argument: _taskring_v1_PutCronRuleRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_PutCronRuleResponse__Output>): grpc.ClientUnaryCall;
  createCronRule(argument: _taskring_v1_PutCronRuleRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_PutCronRuleResponse__Output>): grpc.ClientUnaryCall;
  createCronRule(argument: _taskring_v1_PutCronRuleRequest, callback: grpc.requestCallback<_taskring_v1_PutCronRuleResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Delete cancels the rule's fires not yet started, then removes the rule.
   */
  DeleteCronRule(argument: _taskring_v1_CronRuleRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  DeleteCronRule(argument: _taskring_v1_CronRuleRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  DeleteCronRule(argument: _taskring_v1_CronRuleRef, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  DeleteCronRule(argument: _taskring_v1_CronRuleRef, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  /**
   * Delete cancels the rule's fires not yet started, then removes the rule.
   */
  deleteCronRule(argument: _taskring_v1_CronRuleRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  deleteCronRule(argument: _taskring_v1_CronRuleRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  deleteCronRule(argument: _taskring_v1_CronRuleRef, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  deleteCronRule(argument: _taskring_v1_CronRuleRef, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  
  GetCronRule(argument: _taskring_v1_CronRuleRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  GetCronRule(argument: _taskring_v1_CronRuleRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  GetCronRule(argument: _taskring_v1_CronRuleRef, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  GetCronRule(argument: _taskring_v1_CronRuleRef, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  getCronRule(argument: _taskring_v1_CronRuleRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  getCronRule(argument: _taskring_v1_CronRuleRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  getCronRule(argument: _taskring_v1_CronRuleRef, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  getCronRule(argument: _taskring_v1_CronRuleRef, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  
  ListCronRules(argument: _taskring_v1_ListCronRulesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_ListCronRulesResponse__Output>): grpc.ClientUnaryCall;
  ListCronRules(argument: _taskring_v1_ListCronRulesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_ListCronRulesResponse__Output>): grpc.ClientUnaryCall;
  ListCronRules(argument: _taskring_v1_ListCronRulesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_ListCronRulesResponse__Output>): grpc.ClientUnaryCall;
  ListCronRules(argument: _taskring_v1_ListCronRulesRequest, callback: grpc.requestCallback<_taskring_v1_ListCronRulesResponse__Output>): grpc.ClientUnaryCall;
  listCronRules(argument: _taskring_v1_ListCronRulesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_ListCronRulesResponse__Output>): grpc.ClientUnaryCall;
  listCronRules(argument: _taskring_v1_ListCronRulesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_ListCronRulesResponse__Output>): grpc.ClientUnaryCall;
  listCronRules(argument: _taskring_v1_ListCronRulesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_ListCronRulesResponse__Output>): grpc.ClientUnaryCall;
  listCronRules(argument: _taskring_v1_ListCronRulesRequest, callback: grpc.requestCallback<_taskring_v1_ListCronRulesResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Pause cancels the rule's fires not yet started; Resume plans from now (no catch-up).
   */
  PauseCronRule(argument: _taskring_v1_CronRuleRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  PauseCronRule(argument: _taskring_v1_CronRuleRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  PauseCronRule(argument: _taskring_v1_CronRuleRef, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  PauseCronRule(argument: _taskring_v1_CronRuleRef, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  /**
   * Pause cancels the rule's fires not yet started; Resume plans from now (no catch-up).
   */
  pauseCronRule(argument: _taskring_v1_CronRuleRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  pauseCronRule(argument: _taskring_v1_CronRuleRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  pauseCronRule(argument: _taskring_v1_CronRuleRef, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  pauseCronRule(argument: _taskring_v1_CronRuleRef, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  
  ResumeCronRule(argument: _taskring_v1_CronRuleRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  ResumeCronRule(argument: _taskring_v1_CronRuleRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  ResumeCronRule(argument: _taskring_v1_CronRuleRef, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  ResumeCronRule(argument: _taskring_v1_CronRuleRef, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  resumeCronRule(argument: _taskring_v1_CronRuleRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  resumeCronRule(argument: _taskring_v1_CronRuleRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  resumeCronRule(argument: _taskring_v1_CronRuleRef, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  resumeCronRule(argument: _taskring_v1_CronRuleRef, callback: grpc.requestCallback<_taskring_v1_CronRule__Output>): grpc.ClientUnaryCall;
  
  UpdateCronRule(argument: _taskring_v1_PutCronRuleRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_PutCronRuleResponse__Output>): grpc.ClientUnaryCall;
  UpdateCronRule(argument: _taskring_v1_PutCronRuleRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_PutCronRuleResponse__Output>): grpc.ClientUnaryCall;
  UpdateCronRule(argument: _taskring_v1_PutCronRuleRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_PutCronRuleResponse__Output>): grpc.ClientUnaryCall;
  UpdateCronRule(argument: _taskring_v1_PutCronRuleRequest, callback: grpc.requestCallback<_taskring_v1_PutCronRuleResponse__Output>): grpc.ClientUnaryCall;
  updateCronRule(argument: _taskring_v1_PutCronRuleRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_PutCronRuleResponse__Output>): grpc.ClientUnaryCall;
  updateCronRule(argument: _taskring_v1_PutCronRuleRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_taskring_v1_PutCronRuleResponse__Output>): grpc.ClientUnaryCall;
  updateCronRule(argument: _taskring_v1_PutCronRuleRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_taskring_v1_PutCronRuleResponse__Output>): grpc.ClientUnaryCall;
  updateCronRule(argument: _taskring_v1_PutCronRuleRequest, callback: grpc.requestCallback<_taskring_v1_PutCronRuleResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface CronServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Create fails with ALREADY_EXISTS, Update with NOT_FOUND; both validate the whole rule first.
   */
  CreateCronRule: grpc.handleUnaryCall<_taskring_v1_PutCronRuleRequest__Output, _taskring_v1_PutCronRuleResponse>;
  
  /**
   * Delete cancels the rule's fires not yet started, then removes the rule.
   */
  DeleteCronRule: grpc.handleUnaryCall<_taskring_v1_CronRuleRef__Output, _taskring_v1_CronRule>;
  
  GetCronRule: grpc.handleUnaryCall<_taskring_v1_CronRuleRef__Output, _taskring_v1_CronRule>;
  
  ListCronRules: grpc.handleUnaryCall<_taskring_v1_ListCronRulesRequest__Output, _taskring_v1_ListCronRulesResponse>;
  
  /**
   * Pause cancels the rule's fires not yet started; Resume plans from now (no catch-up).
   */
  PauseCronRule: grpc.handleUnaryCall<_taskring_v1_CronRuleRef__Output, _taskring_v1_CronRule>;
  
  ResumeCronRule: grpc.handleUnaryCall<_taskring_v1_CronRuleRef__Output, _taskring_v1_CronRule>;
  
  UpdateCronRule: grpc.handleUnaryCall<_taskring_v1_PutCronRuleRequest__Output, _taskring_v1_PutCronRuleResponse>;
  
}

export interface CronServiceDefinition extends grpc.ServiceDefinition {
  CreateCronRule: MethodDefinition<_taskring_v1_PutCronRuleRequest, _taskring_v1_PutCronRuleResponse, _taskring_v1_PutCronRuleRequest__Output, _taskring_v1_PutCronRuleResponse__Output>
  DeleteCronRule: MethodDefinition<_taskring_v1_CronRuleRef, _taskring_v1_CronRule, _taskring_v1_CronRuleRef__Output, _taskring_v1_CronRule__Output>
  GetCronRule: MethodDefinition<_taskring_v1_CronRuleRef, _taskring_v1_CronRule, _taskring_v1_CronRuleRef__Output, _taskring_v1_CronRule__Output>
  ListCronRules: MethodDefinition<_taskring_v1_ListCronRulesRequest, _taskring_v1_ListCronRulesResponse, _taskring_v1_ListCronRulesRequest__Output, _taskring_v1_ListCronRulesResponse__Output>
  PauseCronRule: MethodDefinition<_taskring_v1_CronRuleRef, _taskring_v1_CronRule, _taskring_v1_CronRuleRef__Output, _taskring_v1_CronRule__Output>
  ResumeCronRule: MethodDefinition<_taskring_v1_CronRuleRef, _taskring_v1_CronRule, _taskring_v1_CronRuleRef__Output, _taskring_v1_CronRule__Output>
  UpdateCronRule: MethodDefinition<_taskring_v1_PutCronRuleRequest, _taskring_v1_PutCronRuleResponse, _taskring_v1_PutCronRuleRequest__Output, _taskring_v1_PutCronRuleResponse__Output>
}
