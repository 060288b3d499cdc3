// Original file: proto/taskring/v1/taskring.proto


export interface GetGraphRequest {
  'namespace'?: (string);
  'graph_id'?: (string);
  'with_results'?: (boolean);
}

export interface GetGraphRequest__Output {
  'namespace': (string);
  'graph_id': (string);
  'with_results': (boolean);
}
