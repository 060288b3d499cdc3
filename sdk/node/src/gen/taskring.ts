import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { CancelRequest as _taskring_v1_CancelRequest, CancelRequest__Output as _taskring_v1_CancelRequest__Output } from './taskring/v1/CancelRequest';
import type { CancelResponse as _taskring_v1_CancelResponse, CancelResponse__Output as _taskring_v1_CancelResponse__Output } from './taskring/v1/CancelResponse';
import type { CronRule as _taskring_v1_CronRule, CronRule__Output as _taskring_v1_CronRule__Output } from './taskring/v1/CronRule';
import type { CronRuleRef as _taskring_v1_CronRuleRef, CronRuleRef__Output as _taskring_v1_CronRuleRef__Output } from './taskring/v1/CronRuleRef';
import type { CronServiceClient as _taskring_v1_CronServiceClient, CronServiceDefinition as _taskring_v1_CronServiceDefinition } from './taskring/v1/CronService';
import type { DeleteTypePolicyRequest as _taskring_v1_DeleteTypePolicyRequest, DeleteTypePolicyRequest__Output as _taskring_v1_DeleteTypePolicyRequest__Output } from './taskring/v1/DeleteTypePolicyRequest';
import type { Delivery as _taskring_v1_Delivery, Delivery__Output as _taskring_v1_Delivery__Output } from './taskring/v1/Delivery';
import type { ExecuteRequest as _taskring_v1_ExecuteRequest, ExecuteRequest__Output as _taskring_v1_ExecuteRequest__Output } from './taskring/v1/ExecuteRequest';
import type { ExecuteResponse as _taskring_v1_ExecuteResponse, ExecuteResponse__Output as _taskring_v1_ExecuteResponse__Output } from './taskring/v1/ExecuteResponse';
import type { ExecutorServiceClient as _taskring_v1_ExecutorServiceClient, ExecutorServiceDefinition as _taskring_v1_ExecutorServiceDefinition } from './taskring/v1/ExecutorService';
import type { GetTaskRequest as _taskring_v1_GetTaskRequest, GetTaskRequest__Output as _taskring_v1_GetTaskRequest__Output } from './taskring/v1/GetTaskRequest';
import type { GetTaskResponse as _taskring_v1_GetTaskResponse, GetTaskResponse__Output as _taskring_v1_GetTaskResponse__Output } from './taskring/v1/GetTaskResponse';
import type { Heartbeat as _taskring_v1_Heartbeat, Heartbeat__Output as _taskring_v1_Heartbeat__Output } from './taskring/v1/Heartbeat';
import type { HeartbeatAnswer as _taskring_v1_HeartbeatAnswer, HeartbeatAnswer__Output as _taskring_v1_HeartbeatAnswer__Output } from './taskring/v1/HeartbeatAnswer';
import type { ListCronRulesRequest as _taskring_v1_ListCronRulesRequest, ListCronRulesRequest__Output as _taskring_v1_ListCronRulesRequest__Output } from './taskring/v1/ListCronRulesRequest';
import type { ListCronRulesResponse as _taskring_v1_ListCronRulesResponse, ListCronRulesResponse__Output as _taskring_v1_ListCronRulesResponse__Output } from './taskring/v1/ListCronRulesResponse';
import type { ListTypePoliciesRequest as _taskring_v1_ListTypePoliciesRequest, ListTypePoliciesRequest__Output as _taskring_v1_ListTypePoliciesRequest__Output } from './taskring/v1/ListTypePoliciesRequest';
import type { ListTypePoliciesResponse as _taskring_v1_ListTypePoliciesResponse, ListTypePoliciesResponse__Output as _taskring_v1_ListTypePoliciesResponse__Output } from './taskring/v1/ListTypePoliciesResponse';
import type { Outcome as _taskring_v1_Outcome, Outcome__Output as _taskring_v1_Outcome__Output } from './taskring/v1/Outcome';
import type { PolicyServiceClient as _taskring_v1_PolicyServiceClient, PolicyServiceDefinition as _taskring_v1_PolicyServiceDefinition } from './taskring/v1/PolicyService';
import type { PutCronRuleRequest as _taskring_v1_PutCronRuleRequest, PutCronRuleRequest__Output as _taskring_v1_PutCronRuleRequest__Output } from './taskring/v1/PutCronRuleRequest';
import type { PutCronRuleResponse as _taskring_v1_PutCronRuleResponse, PutCronRuleResponse__Output as _taskring_v1_PutCronRuleResponse__Output } from './taskring/v1/PutCronRuleResponse';
import type { PutTypePolicyRequest as _taskring_v1_PutTypePolicyRequest, PutTypePolicyRequest__Output as _taskring_v1_PutTypePolicyRequest__Output } from './taskring/v1/PutTypePolicyRequest';
import type { QueuedTask as _taskring_v1_QueuedTask, QueuedTask__Output as _taskring_v1_QueuedTask__Output } from './taskring/v1/QueuedTask';
import type { RetryPolicy as _taskring_v1_RetryPolicy, RetryPolicy__Output as _taskring_v1_RetryPolicy__Output } from './taskring/v1/RetryPolicy';
import type { SubmitBatchRequest as _taskring_v1_SubmitBatchRequest, SubmitBatchRequest__Output as _taskring_v1_SubmitBatchRequest__Output } from './taskring/v1/SubmitBatchRequest';
import type { SubmitBatchResponse as _taskring_v1_SubmitBatchResponse, SubmitBatchResponse__Output as _taskring_v1_SubmitBatchResponse__Output } from './taskring/v1/SubmitBatchResponse';
import type { SubmitRequest as _taskring_v1_SubmitRequest, SubmitRequest__Output as _taskring_v1_SubmitRequest__Output } from './taskring/v1/SubmitRequest';
import type { SubmitResponse as _taskring_v1_SubmitResponse, SubmitResponse__Output as _taskring_v1_SubmitResponse__Output } from './taskring/v1/SubmitResponse';
import type { Task as _taskring_v1_Task, Task__Output as _taskring_v1_Task__Output } from './taskring/v1/Task';
import type { TaskEvent as _taskring_v1_TaskEvent, TaskEvent__Output as _taskring_v1_TaskEvent__Output } from './taskring/v1/TaskEvent';
import type { TaskServiceClient as _taskring_v1_TaskServiceClient, TaskServiceDefinition as _taskring_v1_TaskServiceDefinition } from './taskring/v1/TaskService';
import type { TypePolicy as _taskring_v1_TypePolicy, TypePolicy__Output as _taskring_v1_TypePolicy__Output } from './taskring/v1/TypePolicy';
import type { TypePolicyRef as _taskring_v1_TypePolicyRef, TypePolicyRef__Output as _taskring_v1_TypePolicyRef__Output } from './taskring/v1/TypePolicyRef';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  taskring: {
    v1: {
      CancelRequest: MessageTypeDefinition<_taskring_v1_CancelRequest, _taskring_v1_CancelRequest__Output>
      CancelResponse: MessageTypeDefinition<_taskring_v1_CancelResponse, _taskring_v1_CancelResponse__Output>
      CronRule: MessageTypeDefinition<_taskring_v1_CronRule, _taskring_v1_CronRule__Output>
      CronRuleRef: MessageTypeDefinition<_taskring_v1_CronRuleRef, _taskring_v1_CronRuleRef__Output>
      CronService: SubtypeConstructor<typeof grpc.Client, _taskring_v1_CronServiceClient> & { service: _taskring_v1_CronServiceDefinition }
      DeleteTypePolicyRequest: MessageTypeDefinition<_taskring_v1_DeleteTypePolicyRequest, _taskring_v1_DeleteTypePolicyRequest__Output>
      Delivery: MessageTypeDefinition<_taskring_v1_Delivery, _taskring_v1_Delivery__Output>
      ExecuteRequest: MessageTypeDefinition<_taskring_v1_ExecuteRequest, _taskring_v1_ExecuteRequest__Output>
      ExecuteResponse: MessageTypeDefinition<_taskring_v1_ExecuteResponse, _taskring_v1_ExecuteResponse__Output>
      ExecutorService: SubtypeConstructor<typeof grpc.Client, _taskring_v1_ExecutorServiceClient> & { service: _taskring_v1_ExecutorServiceDefinition }
      GetTaskRequest: MessageTypeDefinition<_taskring_v1_GetTaskRequest, _taskring_v1_GetTaskRequest__Output>
      GetTaskResponse: MessageTypeDefinition<_taskring_v1_GetTaskResponse, _taskring_v1_GetTaskResponse__Output>
      Heartbeat: MessageTypeDefinition<_taskring_v1_Heartbeat, _taskring_v1_Heartbeat__Output>
      HeartbeatAnswer: MessageTypeDefinition<_taskring_v1_HeartbeatAnswer, _taskring_v1_HeartbeatAnswer__Output>
      HeartbeatVerdict: EnumTypeDefinition
      ListCronRulesRequest: MessageTypeDefinition<_taskring_v1_ListCronRulesRequest, _taskring_v1_ListCronRulesRequest__Output>
      ListCronRulesResponse: MessageTypeDefinition<_taskring_v1_ListCronRulesResponse, _taskring_v1_ListCronRulesResponse__Output>
      ListTypePoliciesRequest: MessageTypeDefinition<_taskring_v1_ListTypePoliciesRequest, _taskring_v1_ListTypePoliciesRequest__Output>
      ListTypePoliciesResponse: MessageTypeDefinition<_taskring_v1_ListTypePoliciesResponse, _taskring_v1_ListTypePoliciesResponse__Output>
      Outcome: MessageTypeDefinition<_taskring_v1_Outcome, _taskring_v1_Outcome__Output>
      OutcomeKind: EnumTypeDefinition
      PolicyService: SubtypeConstructor<typeof grpc.Client, _taskring_v1_PolicyServiceClient> & { service: _taskring_v1_PolicyServiceDefinition }
      Priority: EnumTypeDefinition
      PutCronRuleRequest: MessageTypeDefinition<_taskring_v1_PutCronRuleRequest, _taskring_v1_PutCronRuleRequest__Output>
      PutCronRuleResponse: MessageTypeDefinition<_taskring_v1_PutCronRuleResponse, _taskring_v1_PutCronRuleResponse__Output>
      PutTypePolicyRequest: MessageTypeDefinition<_taskring_v1_PutTypePolicyRequest, _taskring_v1_PutTypePolicyRequest__Output>
      QueuedTask: MessageTypeDefinition<_taskring_v1_QueuedTask, _taskring_v1_QueuedTask__Output>
      RetryPolicy: MessageTypeDefinition<_taskring_v1_RetryPolicy, _taskring_v1_RetryPolicy__Output>
      SubmitBatchRequest: MessageTypeDefinition<_taskring_v1_SubmitBatchRequest, _taskring_v1_SubmitBatchRequest__Output>
      SubmitBatchResponse: MessageTypeDefinition<_taskring_v1_SubmitBatchResponse, _taskring_v1_SubmitBatchResponse__Output>
      SubmitRequest: MessageTypeDefinition<_taskring_v1_SubmitRequest, _taskring_v1_SubmitRequest__Output>
      SubmitResponse: MessageTypeDefinition<_taskring_v1_SubmitResponse, _taskring_v1_SubmitResponse__Output>
      Task: MessageTypeDefinition<_taskring_v1_Task, _taskring_v1_Task__Output>
      TaskEvent: MessageTypeDefinition<_taskring_v1_TaskEvent, _taskring_v1_TaskEvent__Output>
      TaskService: SubtypeConstructor<typeof grpc.Client, _taskring_v1_TaskServiceClient> & { service: _taskring_v1_TaskServiceDefinition }
      TaskState: EnumTypeDefinition
      TypePolicy: MessageTypeDefinition<_taskring_v1_TypePolicy, _taskring_v1_TypePolicy__Output>
      TypePolicyRef: MessageTypeDefinition<_taskring_v1_TypePolicyRef, _taskring_v1_TypePolicyRef__Output>
    }
  }
}

