{{/* The name of every object: the release name, or "taskring" for a release named so. */}}
{{- define "taskring.fullname" -}}
{{- if eq .Release.Name "taskring" -}}taskring{{- else -}}{{ printf "%s-taskring" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "taskring.labels" -}}
app.kubernetes.io/name: taskring
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: taskring
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "taskring.selector" -}}
app.kubernetes.io/name: taskring
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: dispatcher
{{- end -}}

{{- define "taskring.image" -}}
{{ printf "%s:%s" .Values.image.repository (toString .Values.image.tag) }}
{{- end -}}

{{/* The password from the Secret, for the nodes, the init container and the migration Job. */}}
{{- define "taskring.mysqlPassword" -}}
- name: TASKRING_MYSQL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .Values.secretName }}
      key: mysql-password
      optional: true
{{- end -}}

{{- define "taskring.podSecurity" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "taskring.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}
