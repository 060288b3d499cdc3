import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { AddGraphTasksRequest as _taskring_v1_AddGraphTasksRequest, AddGraphTasksRequest__Output as _taskring_v1_AddGraphTasksRequest__Output } from './taskring/v1/AddGraphTasksRequest';
import type { AddGraphTasksResponse as _taskring_v1_AddGraphTasksResponse, AddGraphTasksResponse__Output as _taskring_v1_AddGraphTasksResponse__Output } from './taskring/v1/AddGraphTasksResponse';
import type { CancelGraphRequest as _taskring_v1_CancelGraphRequest, CancelGraphRequest__Output as _taskring_v1_CancelGraphRequest__Output } from './taskring/v1/CancelGraphRequest';
import type { CancelGraphResponse as _taskring_v1_CancelGraphResponse, CancelGraphResponse__Output as _taskring_v1_CancelGraphResponse__Output } from './taskring/v1/CancelGraphResponse';
import type { CancelRequest as _taskring_v1_CancelRequest, CancelRequest__Output as _taskring_v1_CancelRequest__Output } from './taskring/v1/CancelRequest';
import type { CancelResponse as _taskring_v1_CancelResponse, CancelResponse__Output as _taskring_v1_CancelResponse__Output } from './taskring/v1/CancelResponse';
import type { CronRule as _taskring_v1_CronRule, CronRule__Output as _taskring_v1_CronRule__Output } from './taskring/v1/CronRule';
import type { CronRuleRef as _taskring_v1_CronRuleRef, CronRuleRef__Output as _taskring_v1_CronRuleRef__Output } from './taskring/v1/CronRuleRef';
import type { CronServiceClient as _taskring_v1_CronServiceClient, CronServiceDefinition as _taskring_v1_CronServiceDefinition } from './taskring/v1/CronService';
import type { DeleteTypePolicyRequest as _taskring_v1_DeleteTypePolicyRequest, DeleteTypePolicyRequest__Output as _taskring_v1_DeleteTypePolicyRequest__Output } from './taskring/v1/DeleteTypePolicyRequest';
import type { Delivery as _taskring_v1_Delivery, Delivery__Output as _taskring_v1_Delivery__Output } from './taskring/v1/Delivery';
import type { Dependency as _taskring_v1_Dependency, Dependency__Output as _taskring_v1_Dependency__Output } from './taskring/v1/Dependency';
import type { ExecuteRequest as _taskring_v1_ExecuteRequest, ExecuteRequest__Output as _taskring_v1_ExecuteRequest__Output } from './taskring/v1/ExecuteRequest';
import type { ExecuteResponse as _taskring_v1_ExecuteResponse, ExecuteResponse__Output as _taskring_v1_ExecuteResponse__Output } from './taskring/v1/ExecuteResponse';
import type { ExecutorServiceClient as _taskring_v1_ExecutorServiceClient, ExecutorServiceDefinition as _taskring_v1_ExecutorServiceDefinition } from './taskring/v1/ExecutorService';
import type { GetGraphRequest as _taskring_v1_GetGraphRequest, GetGraphRequest__Output as _taskring_v1_GetGraphRequest__Output } from './taskring/v1/GetGraphRequest';
import type { GetGraphResponse as _taskring_v1_GetGraphResponse, GetGraphResponse__Output as _taskring_v1_GetGraphResponse__Output } from './taskring/v1/GetGraphResponse';
import type { GetTaskRequest as _taskring_v1_GetTaskRequest, GetTaskRequest__Output as _taskring_v1_GetTaskRequest__Output } from './taskring/v1/GetTaskRequest';
import type { GetTaskResponse as _taskring_v1_GetTaskResponse, GetTaskResponse__Output as _taskring_v1_GetTaskResponse__Output } from './taskring/v1/GetTaskResponse';
import type { GraphEdge as _taskring_v1_GraphEdge, GraphEdge__Output as _taskring_v1_GraphEdge__Output } from './taskring/v1/GraphEdge';
import type { GraphNode as _taskring_v1_GraphNode, GraphNode__Output as _taskring_v1_GraphNode__Output } from './taskring/v1/GraphNode';
import type { GraphRef as _taskring_v1_GraphRef, GraphRef__Output as _taskring_v1_GraphRef__Output } from './taskring/v1/GraphRef';
import type { GraphServiceClient as _taskring_v1_GraphServiceClient, GraphServiceDefinition as _taskring_v1_GraphServiceDefinition } from './taskring/v1/GraphService';
import type { GraphTask as _taskring_v1_GraphTask, GraphTask__Output as _taskring_v1_GraphTask__Output } from './taskring/v1/GraphTask';
import type { GraphTaskRef as _taskring_v1_GraphTaskRef, GraphTaskRef__Output as _taskring_v1_GraphTaskRef__Output } from './taskring/v1/GraphTaskRef';
import type { Heartbeat as _taskring_v1_Heartbeat, Heartbeat__Output as _taskring_v1_Heartbeat__Output } from './taskring/v1/Heartbeat';
import type { HeartbeatAnswer as _taskring_v1_HeartbeatAnswer, HeartbeatAnswer__Output as _taskring_v1_HeartbeatAnswer__Output } from './taskring/v1/HeartbeatAnswer';
import type { Join as _taskring_v1_Join, Join__Output as _taskring_v1_Join__Output } from './taskring/v1/Join';
import type { ListCronRulesRequest as _taskring_v1_ListCronRulesRequest, ListCronRulesRequest__Output as _taskring_v1_ListCronRulesRequest__Output } from './taskring/v1/ListCronRulesRequest';
import type { ListCronRulesResponse as _taskring_v1_ListCronRulesResponse, ListCronRulesResponse__Output as _taskring_v1_ListCronRulesResponse__Output } from './taskring/v1/ListCronRulesResponse';
import type { ListTypePoliciesRequest as _taskring_v1_ListTypePoliciesRequest, ListTypePoliciesRequest__Output as _taskring_v1_ListTypePoliciesRequest__Output } from './taskring/v1/ListTypePoliciesRequest';
import type { ListTypePoliciesResponse as _taskring_v1_ListTypePoliciesResponse, ListTypePoliciesResponse__Output as _taskring_v1_ListTypePoliciesResponse__Output } from './taskring/v1/ListTypePoliciesResponse';
import type { Outcome as _taskring_v1_Outcome, Outcome__Output as _taskring_v1_Outcome__Output } from './taskring/v1/Outcome';
import type { ParentResult as _taskring_v1_ParentResult, ParentResult__Output as _taskring_v1_ParentResult__Output } from './taskring/v1/ParentResult';
import type { PolicyServiceClient as _taskring_v1_PolicyServiceClient, PolicyServiceDefinition as _taskring_v1_PolicyServiceDefinition } from './taskring/v1/PolicyService';
import type { PutCronRuleRequest as _taskring_v1_PutCronRuleRequest, PutCronRuleRequest__Output as _taskring_v1_PutCronRuleRequest__Output } from './taskring/v1/PutCronRuleRequest';
import type { PutCronRuleResponse as _taskring_v1_PutCronRuleResponse, PutCronRuleResponse__Output as _taskring_v1_PutCronRuleResponse__Output } from './taskring/v1/PutCronRuleResponse';
import type { PutTypePolicyRequest as _taskring_v1_PutTypePolicyRequest, PutTypePolicyRequest__Output as _taskring_v1_PutTypePolicyRequest__Output } from './taskring/v1/PutTypePolicyRequest';
import type { QueuedTask as _taskring_v1_QueuedTask, QueuedTask__Output as _taskring_v1_QueuedTask__Output } from './taskring/v1/QueuedTask';
import type { RetryPolicy as _taskring_v1_RetryPolicy, RetryPolicy__Output as _taskring_v1_RetryPolicy__Output } from './taskring/v1/RetryPolicy';
import type { SubmitBatchRequest as _taskring_v1_SubmitBatchRequest, SubmitBatchRequest__Output as _taskring_v1_SubmitBatchRequest__Output } from './taskring/v1/SubmitBatchRequest';
import type { SubmitBatchResponse as _taskring_v1_SubmitBatchResponse, SubmitBatchResponse__Output as _taskring_v1_SubmitBatchResponse__Output } from './taskring/v1/SubmitBatchResponse';
import type { SubmitGraphRequest as _taskring_v1_SubmitGraphRequest, SubmitGraphRequest__Output as _taskring_v1_SubmitGraphRequest__Output } from './taskring/v1/SubmitGraphRequest';
import type { SubmitGraphResponse as _taskring_v1_SubmitGraphResponse, SubmitGraphResponse__Output as _taskring_v1_SubmitGraphResponse__Output } from './taskring/v1/SubmitGraphResponse';
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
      AddGraphTasksRequest: MessageTypeDefinition<_taskring_v1_AddGraphTasksRequest, _taskring_v1_AddGraphTasksRequest__Output>
      AddGraphTasksResponse: MessageTypeDefinition<_taskring_v1_AddGraphTasksResponse, _taskring_v1_AddGraphTasksResponse__Output>
      CancelGraphRequest: MessageTypeDefinition<_taskring_v1_CancelGraphRequest, _taskring_v1_CancelGraphRequest__Output>
      CancelGraphResponse: MessageTypeDefinition<_taskring_v1_CancelGraphResponse, _taskring_v1_CancelGraphResponse__Output>
      CancelMode: EnumTypeDefinition
      CancelRequest: MessageTypeDefinition<_taskring_v1_CancelRequest, _taskring_v1_CancelRequest__Output>
      CancelResponse: MessageTypeDefinition<_taskring_v1_CancelResponse, _taskring_v1_CancelResponse__Output>
      CronRule: MessageTypeDefinition<_taskring_v1_CronRule, _taskring_v1_CronRule__Output>
      CronRuleRef: MessageTypeDefinition<_taskring_v1_CronRuleRef, _taskring_v1_CronRuleRef__Output>
      CronService: SubtypeConstructor<typeof grpc.Client, _taskring_v1_CronServiceClient> & { service: _taskring_v1_CronServiceDefinition }
      DeleteTypePolicyRequest: MessageTypeDefinition<_taskring_v1_DeleteTypePolicyRequest, _taskring_v1_DeleteTypePolicyRequest__Output>
      Delivery: MessageTypeDefinition<_taskring_v1_Delivery, _taskring_v1_Delivery__Output>
      Dependency: MessageTypeDefinition<_taskring_v1_Dependency, _taskring_v1_Dependency__Output>
      ExecuteRequest: MessageTypeDefinition<_taskring_v1_ExecuteRequest, _taskring_v1_ExecuteRequest__Output>
      ExecuteResponse: MessageTypeDefinition<_taskring_v1_ExecuteResponse, _taskring_v1_ExecuteResponse__Output>
      ExecutorService: SubtypeConstructor<typeof grpc.Client, _taskring_v1_ExecutorServiceClient> & { service: _taskring_v1_ExecutorServiceDefinition }
      GetGraphRequest: MessageTypeDefinition<_taskring_v1_GetGraphRequest, _taskring_v1_GetGraphRequest__Output>
      GetGraphResponse: MessageTypeDefinition<_taskring_v1_GetGraphResponse, _taskring_v1_GetGraphResponse__Output>
      GetTaskRequest: MessageTypeDefinition<_taskring_v1_GetTaskRequest, _taskring_v1_GetTaskRequest__Output>
      GetTaskResponse: MessageTypeDefinition<_taskring_v1_GetTaskResponse, _taskring_v1_GetTaskResponse__Output>
      GraphEdge: MessageTypeDefinition<_taskring_v1_GraphEdge, _taskring_v1_GraphEdge__Output>
      GraphNode: MessageTypeDefinition<_taskring_v1_GraphNode, _taskring_v1_GraphNode__Output>
      GraphRef: MessageTypeDefinition<_taskring_v1_GraphRef, _taskring_v1_GraphRef__Output>
      GraphService: SubtypeConstructor<typeof grpc.Client, _taskring_v1_GraphServiceClient> & { service: _taskring_v1_GraphServiceDefinition }
      GraphTask: MessageTypeDefinition<_taskring_v1_GraphTask, _taskring_v1_GraphTask__Output>
      GraphTaskRef: MessageTypeDefinition<_taskring_v1_GraphTaskRef, _taskring_v1_GraphTaskRef__Output>
      Heartbeat: MessageTypeDefinition<_taskring_v1_Heartbeat, _taskring_v1_Heartbeat__Output>
      HeartbeatAnswer: MessageTypeDefinition<_taskring_v1_HeartbeatAnswer, _taskring_v1_HeartbeatAnswer__Output>
      HeartbeatVerdict: EnumTypeDefinition
      Join: MessageTypeDefinition<_taskring_v1_Join, _taskring_v1_Join__Output>
      JoinRule: EnumTypeDefinition
      ListCronRulesRequest: MessageTypeDefinition<_taskring_v1_ListCronRulesRequest, _taskring_v1_ListCronRulesRequest__Output>
      ListCronRulesResponse: MessageTypeDefinition<_taskring_v1_ListCronRulesResponse, _taskring_v1_ListCronRulesResponse__Output>
      ListTypePoliciesRequest: MessageTypeDefinition<_taskring_v1_ListTypePoliciesRequest, _taskring_v1_ListTypePoliciesRequest__Output>
      ListTypePoliciesResponse: MessageTypeDefinition<_taskring_v1_ListTypePoliciesResponse, _taskring_v1_ListTypePoliciesResponse__Output>
      OnFailure: EnumTypeDefinition
      Outcome: MessageTypeDefinition<_taskring_v1_Outcome, _taskring_v1_Outcome__Output>
      OutcomeKind: EnumTypeDefinition
      ParentResult: MessageTypeDefinition<_taskring_v1_ParentResult, _taskring_v1_ParentResult__Output>
      PolicyService: SubtypeConstructor<typeof grpc.Client, _taskring_v1_PolicyServiceClient> & { service: _taskring_v1_PolicyServiceDefinition }
      Priority: EnumTypeDefinition
      PutCronRuleRequest: MessageTypeDefinition<_taskring_v1_PutCronRuleRequest, _taskring_v1_PutCronRuleRequest__Output>
      PutCronRuleResponse: MessageTypeDefinition<_taskring_v1_PutCronRuleResponse, _taskring_v1_PutCronRuleResponse__Output>
      PutTypePolicyRequest: MessageTypeDefinition<_taskring_v1_PutTypePolicyRequest, _taskring_v1_PutTypePolicyRequest__Output>
      QueuedTask: MessageTypeDefinition<_taskring_v1_QueuedTask, _taskring_v1_QueuedTask__Output>
      RetryPolicy: MessageTypeDefinition<_taskring_v1_RetryPolicy, _taskring_v1_RetryPolicy__Output>
      SubmitBatchRequest: MessageTypeDefinition<_taskring_v1_SubmitBatchRequest, _taskring_v1_SubmitBatchRequest__Output>
      SubmitBatchResponse: MessageTypeDefinition<_taskring_v1_SubmitBatchResponse, _taskring_v1_SubmitBatchResponse__Output>
      SubmitGraphRequest: MessageTypeDefinition<_taskring_v1_SubmitGraphRequest, _taskring_v1_SubmitGraphRequest__Output>
      SubmitGraphResponse: MessageTypeDefinition<_taskring_v1_SubmitGraphResponse, _taskring_v1_SubmitGraphResponse__Output>
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

