{{/*
Helpers shared by both modes. Every helper takes the chart's context: the root context `.`
inside this chart, or `.Subcharts.driftwatch` when a model chart includes the sidecar
templates (_sidecar.tpl). That context has .Values, .Release and .Chart but no .Template,
.Files or .Capabilities, so no helper here may use those.
*/}}

{{- define "driftwatch.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "driftwatch.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "driftwatch.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The agent's Pods and Services; the component keeps the helm test Pod out of them. */}}
{{- define "driftwatch.selectorLabels" -}}
app.kubernetes.io/name: {{ include "driftwatch.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end }}

{{/* Labels of every object but the selector ones. */}}
{{- define "driftwatch.commonLabels" -}}
helm.sh/chart: {{ include "driftwatch.chart" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/part-of: driftwatch
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "driftwatch.labels" -}}
{{ include "driftwatch.selectorLabels" . }}
{{ include "driftwatch.commonLabels" . }}
{{- end }}

{{/* The label a model Pod carries when it runs the sidecar; the sidecar-mode Service selects it. */}}
{{- define "driftwatch.sidecarLabelKey" -}}driftwatch.io/sidecar{{- end }}

{{- define "driftwatch.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "driftwatch.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The agent's image. No public image exists (the repository's Dockerfile builds it), so
image.repository has no default and an install without it stops here, saying how to get one.
*/}}
{{- define "driftwatch.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion }}
{{- $repository := required (printf "image.repository is required: driftwatch publishes no image. Build one from the repository's Dockerfile and push it to a registry your cluster pulls from, then name it: docker build -t REGISTRY/driftwatch-agent:%s . && docker push REGISTRY/driftwatch-agent:%s && helm install ... --set image.repository=REGISTRY/driftwatch-agent (docs/kubernetes.md, Image)" $tag $tag) .Values.image.repository }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" $repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repository $tag }}
{{- end }}
{{- end }}

{{/* Where the settings ConfigMap is mounted, and the file the agent reads (DRIFTWATCH_CONFIG). */}}
{{- define "driftwatch.configDir" -}}/etc/driftwatch{{- end }}
{{- define "driftwatch.configFile" -}}/etc/driftwatch/driftwatch.yaml{{- end }}
{{- define "driftwatch.kafkaTlsDir" -}}/var/run/secrets/driftwatch/kafka-tls{{- end }}
{{- define "driftwatch.metricsTlsDir" -}}/var/run/secrets/driftwatch/metrics-tls{{- end }}

{{/*
The settings file: .Values.settings as given (it mirrors driftwatch's settings model, see
`driftwatch config schema`), plus computed defaults: kafka.group_id and kafka.client_id
are the release's fullname unless set, so that two releases never share a consumer group
by accident (they would split each other's partitions); in sidecar mode with
sidecar.wholeStream, kafka.assignment is all_partitions unless set, so that every replica of
the model reads the whole stream.
*/}}
{{- define "driftwatch.settingsDict" -}}
{{- $settings := deepCopy (.Values.settings | default dict) }}
{{- $kafka := get $settings "kafka" | default dict }}
{{- if not (get $kafka "group_id") }}
{{- $_ := set $kafka "group_id" (include "driftwatch.fullname" .) }}
{{- end }}
{{- if not (get $kafka "client_id") }}
{{- $_ := set $kafka "client_id" (include "driftwatch.fullname" .) }}
{{- end }}
{{- if and (eq .Values.mode "sidecar") .Values.sidecar.wholeStream (not (get $kafka "assignment")) }}
{{- $_ := set $kafka "assignment" "all_partitions" }}
{{- end }}
{{- $_ := set $settings "kafka" $kafka }}
{{- toYaml $settings }}
{{- end }}

{{- define "driftwatch.settingsFile" -}}
# driftwatch settings, rendered by the Helm chart from .Values.settings.
# Secrets are not here: they come from existing Secrets as DRIFTWATCH_* environment variables.
{{ include "driftwatch.settingsDict" . }}
{{- end }}

{{/* Rolls the Pods whenever the settings file changes. */}}
{{- define "driftwatch.configChecksum" -}}
{{- include "driftwatch.settingsFile" . | sha256sum }}
{{- end }}

{{- define "driftwatch.metricsPort" -}}
{{- dig "metrics" "port" 9108 (.Values.settings | default dict) | int }}
{{- end }}

{{- define "driftwatch.metricsScheme" -}}
{{- if dig "metrics" "tls_certfile" "" (.Values.settings | default dict) }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{- define "driftwatch.checkpointEnabled" -}}
{{- if dig "checkpoint" "enabled" true (.Values.settings | default dict) }}true{{ end }}
{{- end }}

{{- define "driftwatch.checkpointDir" -}}
{{- dig "checkpoint" "directory" "/var/lib/driftwatch" (.Values.settings | default dict) }}
{{- end }}

{{/*
Checks the schema cannot express (or that must hold even with --skip-schema-validation).
Renders nothing; fails the release with a message naming the key.
*/}}
{{- define "driftwatch.validate" -}}
{{- $settings := .Values.settings | default dict }}
{{- range $key := list "sasl_plain_password" "ssl_password" }}
{{- if hasKey (get $settings "kafka" | default dict) $key }}
{{- fail (printf "settings.kafka.%s must not be in values (it would land in a ConfigMap): put it in a Secret and name it in secrets.kafka" $key) }}
{{- end }}
{{- end }}
{{- if hasKey (get $settings "metrics" | default dict) "basic_auth_password" }}
{{- fail "settings.metrics.basic_auth_password must not be in values (it would land in a ConfigMap): put it in a Secret and name it in secrets.metricsBasicAuth" }}
{{- end }}
{{- if hasKey (dig "exporters" "otlp" dict $settings) "headers" }}
{{- fail "settings.exporters.otlp.headers must not be in values (they would land in a ConfigMap): set DRIFTWATCH_EXPORTERS__OTLP__HEADERS (JSON) from a Secret through extraEnv" }}
{{- end }}
{{- $port := include "driftwatch.metricsPort" . | int }}
{{- if or (lt $port 1) (gt $port 65535) }}
{{- fail (printf "settings.metrics.port must be a real port (1-65535) in Kubernetes: the probes and the Service use it, got %d" $port) }}
{{- end }}
{{- if not (hasPrefix "/" (include "driftwatch.checkpointDir" .)) }}
{{- fail (printf "settings.checkpoint.directory must be an absolute path (the checkpoint volume is mounted there), got %q" (include "driftwatch.checkpointDir" .)) }}
{{- end }}
{{- if and .Values.persistence.enabled (eq .Values.mode "standalone") (gt (int .Values.replicaCount) 1) }}
{{- fail (printf "persistence.enabled needs replicaCount 1 (got %d): the agent keeps one checkpoint file per directory, and replicas sharing a claim would overwrite each other's; with several replicas keep the default emptyDir (state survives container restarts, not Pod replacement)" (int .Values.replicaCount)) }}
{{- end }}
{{- if and .Values.secrets.kafka.saslUsernameKey (dig "kafka" "sasl_plain_username" "" $settings) }}
{{- fail "set the SASL user name either in settings.kafka.sasl_plain_username or through secrets.kafka.saslUsernameKey, not both" }}
{{- end }}
{{- with .Values.secrets.kafka }}
{{- if and (or .saslUsernameKey .saslPasswordKey .sslPasswordKey) (not .name) }}
{{- fail "secrets.kafka: a key is set but not the Secret's name (secrets.kafka.name)" }}
{{- end }}
{{- end }}
{{- with .Values.secrets.metricsBasicAuth }}
{{- if and .name (dig "metrics" "basic_auth_username" "" $settings) }}
{{- fail "secrets.metricsBasicAuth sets the basic auth user name: remove settings.metrics.basic_auth_username" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The agent's environment: the settings file, the static member's name (its Pod's),
Secret-backed credentials, extraEnv. */}}
{{- define "driftwatch.env" -}}
- name: DRIFTWATCH_CONFIG
  value: {{ include "driftwatch.configFile" . | quote }}
{{- if (.Values.settings.kafka).group_instance_id }}
{{- fail "settings.kafka.group_instance_id would give every replica one id (they would fence each other): set staticMembership, which takes each Pod's name" }}
{{- end }}
{{- if .Values.staticMembership }}
{{- if eq (include "driftwatch.settingsDict" . | fromYaml).kafka.assignment "all_partitions" }}
{{- fail "staticMembership needs a consumer group: kafka.assignment all_partitions (sidecar.wholeStream's default) joins none" }}
{{- end }}
- name: DRIFTWATCH_KAFKA__GROUP_INSTANCE_ID
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- end }}
{{- with .Values.secrets.kafka }}
{{- if and .name .saslUsernameKey }}
- name: DRIFTWATCH_KAFKA__SASL_PLAIN_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ .name | quote }}
      key: {{ .saslUsernameKey | quote }}
{{- end }}
{{- if and .name .saslPasswordKey }}
- name: DRIFTWATCH_KAFKA__SASL_PLAIN_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .name | quote }}
      key: {{ .saslPasswordKey | quote }}
{{- end }}
{{- if and .name .sslPasswordKey }}
- name: DRIFTWATCH_KAFKA__SSL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .name | quote }}
      key: {{ .sslPasswordKey | quote }}
{{- end }}
{{- end }}
{{- with .Values.secrets.metricsBasicAuth }}
{{- if .name }}
- name: DRIFTWATCH_METRICS__BASIC_AUTH_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ .name | quote }}
      key: {{ .usernameKey | quote }}
- name: DRIFTWATCH_METRICS__BASIC_AUTH_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .name | quote }}
      key: {{ .passwordKey | quote }}
{{- end }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "driftwatch.volumeMounts" -}}
- name: driftwatch-config
  mountPath: {{ include "driftwatch.configDir" . }}
  readOnly: true
- name: driftwatch-tmp
  mountPath: /tmp
{{- if include "driftwatch.checkpointEnabled" . }}
- name: driftwatch-state
  mountPath: {{ include "driftwatch.checkpointDir" . }}
{{- end }}
{{- if .Values.secrets.kafkaTls.name }}
- name: driftwatch-kafka-tls
  mountPath: {{ include "driftwatch.kafkaTlsDir" . }}
  readOnly: true
{{- end }}
{{- if .Values.secrets.metricsTls.name }}
- name: driftwatch-metrics-tls
  mountPath: {{ include "driftwatch.metricsTlsDir" . }}
  readOnly: true
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "driftwatch.volumes" -}}
- name: driftwatch-config
  configMap:
    name: {{ include "driftwatch.fullname" . }}
- name: driftwatch-tmp
  emptyDir:
    sizeLimit: 16Mi
{{- if include "driftwatch.checkpointEnabled" . }}
- name: driftwatch-state
{{- if .Values.persistence.enabled }}
  persistentVolumeClaim:
    claimName: {{ .Values.persistence.existingClaim | default (printf "%s-state" (include "driftwatch.fullname" .)) }}
{{- else }}
  emptyDir:
    {{- with .Values.persistence.emptyDir.medium }}
    medium: {{ . }}
    {{- end }}
    sizeLimit: {{ .Values.persistence.emptyDir.sizeLimit }}
{{- end }}
{{- end }}
{{- if .Values.secrets.kafkaTls.name }}
- name: driftwatch-kafka-tls
  secret:
    secretName: {{ .Values.secrets.kafkaTls.name | quote }}
    defaultMode: 0440
{{- end }}
{{- if .Values.secrets.metricsTls.name }}
- name: driftwatch-metrics-tls
  secret:
    secretName: {{ .Values.secrets.metricsTls.name | quote }}
    defaultMode: 0440
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "driftwatch.probe" -}}
{{- $probe := index . 0 }}
{{- $path := index . 1 }}
{{- $scheme := index . 2 -}}
httpGet:
  path: {{ $path }}
  port: dw-metrics
  scheme: {{ $scheme }}
{{- toYaml (omit $probe "enabled") | nindent 0 }}
{{- end }}

{{/*
The agent's container, as a list item. Used by the standalone Deployment and, through
driftwatch.sidecar.container, by model charts. In sidecar mode the readiness probe is off
unless sidecar.readinessProbe is true: a not-ready container makes the whole Pod not ready,
and a Kafka outage must not take the model out of its Service.
*/}}
{{- define "driftwatch.container" -}}
{{- $sidecar := eq .Values.mode "sidecar" }}
{{- $scheme := include "driftwatch.metricsScheme" . -}}
- name: driftwatch
  image: {{ include "driftwatch.image" . | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  env:
    {{- include "driftwatch.env" . | nindent 4 }}
  ports:
    - name: dw-metrics
      containerPort: {{ include "driftwatch.metricsPort" . }}
      protocol: TCP
  {{- if .Values.probes.startup.enabled }}
  startupProbe:
    {{- include "driftwatch.probe" (list .Values.probes.startup "/healthz" $scheme) | nindent 4 }}
  {{- end }}
  {{- if .Values.probes.liveness.enabled }}
  livenessProbe:
    {{- include "driftwatch.probe" (list .Values.probes.liveness "/healthz" $scheme) | nindent 4 }}
  {{- end }}
  {{- if and .Values.probes.readiness.enabled (or (not $sidecar) .Values.sidecar.readinessProbe) }}
  readinessProbe:
    {{- include "driftwatch.probe" (list .Values.probes.readiness "/readyz" $scheme) | nindent 4 }}
  {{- end }}
  resources:
    {{- toYaml (ternary .Values.sidecar.resources .Values.resources $sidecar) | nindent 4 }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  volumeMounts:
    {{- include "driftwatch.volumeMounts" . | nindent 4 }}
{{- end }}

{{/* The labels that select the agent's Pods: the Deployment's in standalone mode, the model
Pods carrying the sidecar otherwise (sidecar.selectorLabels, or the label
driftwatch.sidecar.podLabels puts on them). Used by the Service, the PodMonitor and the
NetworkPolicy. */}}
{{- define "driftwatch.podSelector" -}}
{{- if eq .Values.mode "standalone" }}
{{- include "driftwatch.selectorLabels" . }}
{{- else if .Values.sidecar.selectorLabels }}
{{- toYaml .Values.sidecar.selectorLabels }}
{{- else }}
{{- include "driftwatch.sidecar.podLabels" . }}
{{- end }}
{{- end }}

{{/* The Kafka ports of settings.kafka.bootstrap_servers (host:port each), distinct, as a
list: the NetworkPolicy's default egress ports. */}}
{{- define "driftwatch.kafkaPorts" -}}
{{- $ports := list }}
{{- range $server := dig "kafka" "bootstrap_servers" (list "localhost:9092") (.Values.settings | default dict) }}
{{- $port := last (splitList ":" $server) | int }}
{{- if and (gt $port 0) (not (has $port $ports)) }}
{{- $ports = append $ports $port }}
{{- end }}
{{- end }}
{{- toJson $ports }}
{{- end }}

{{/*
Memory, in MiB, the agent may need at a checkpoint save with settings.join enabled, from the
settings' bounds (the formula in values.yaml, above resources; measured in
benchmarks/join_memory.py): the monitors, 60 MiB + 0.42 KiB x window_size x max_models, plus
the join at its bounds, 640 B x max_pending x max_models + 500 B x max_pending_labels +
140 B x remember, plus each model's label-free signals, 1.2 MiB (2.8 MiB with
reference: previous; none when score_drift is off). The defaults are the settings model's;
with events.model_source constant (a sidecar's usual form) there is one model.
*/}}
{{- define "driftwatch.joinMemoryMiB" -}}
{{- $settings := .Values.settings | default dict }}
{{- $join := $settings.join | default dict }}
{{- $drift := $join.score_drift | default dict }}
{{- $models := dig "limits" "max_models" 100 $settings | float64 }}
{{- if eq (dig "events" "model_source" "" $settings) "constant" }}{{ $models = 1.0 }}{{ end }}
{{- $window := dig "monitoring" "defaults" "window_size" 1000 $settings | float64 }}
{{- $signals := ternary 2.8 1.2 (eq (dig "reference" "frozen" $drift) "previous") }}
{{- if not (dig "enabled" true $drift) }}{{ $signals = 0.0 }}{{ end }}
{{- $monitors := addf 60 (divf (mulf 0.42 $window $models) 1024) }}
{{- $records := addf (mulf 640 (dig "max_pending" 100000 $join | float64) $models)
      (mulf 500 (dig "max_pending_labels" 100000 $join | float64))
      (mulf 140 (dig "remember" 100000 $join | float64)) }}
{{- addf $monitors (divf $records 1048576) (mulf $signals $models) | ceil | int }}
{{- end }}

{{/* A memory quantity (Ki/Mi/Gi/Ti, k/M/G/T or bytes) in whole MiB; "" when not one. */}}
{{- define "driftwatch.quantityMiB" -}}
{{- $q := toString . }}
{{- $bytes := dict "" 1 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 }}
{{- if regexMatch "^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$" $q }}
{{- $number := regexReplaceAll "[^0-9.]" $q "" | float64 }}
{{- $unit := regexReplaceAll "^[0-9.]+" $q "" }}
{{- divf (mulf $number (get $bytes $unit)) 1048576 | floor | int }}
{{- end }}
{{- end }}

{{/* A Prometheus duration (e.g. 1h30m, 90s) in whole seconds; milliseconds are dropped. */}}
{{- define "driftwatch.durationSeconds" -}}
{{- $seconds := dict "ms" 0 "s" 1 "m" 60 "h" 3600 "d" 86400 "w" 604800 "y" 31536000 }}
{{- $total := 0 }}
{{- range $part := regexFindAll "[0-9]+(ms|s|m|h|d|w|y)" (toString .) -1 }}
{{- $unit := regexReplaceAll "^[0-9]+" $part "" }}
{{- $total = add $total (mul (regexFind "^[0-9]+" $part | atoi) (get $seconds $unit)) }}
{{- end }}
{{- $total }}
{{- end }}

{{/*
An alert's description with the duration it states ("For 10 minutes": the expression's own
look-back plus the rule's `for:`, see files/alerts.yaml) moved by a tuned `for:`. Takes
(dict "description" ... "from" <the file's for> "to" <the tuned for>).
*/}}
{{- define "driftwatch.describedHold" -}}
{{- $stated := regexFind "[Ff]or [0-9]+ minutes?" .description }}
{{- if $stated }}
{{- $before := mul (regexFind "[0-9]+" $stated | atoi) 60 }}
{{- $after := add $before (sub (include "driftwatch.durationSeconds" .to | atoi) (include "driftwatch.durationSeconds" .from | atoi)) }}
{{- $length := "" }}
{{- if eq $after 60 }}{{ $length = "1 minute" }}
{{- else if eq (mod $after 60) 0 }}{{ $length = printf "%d minutes" (div $after 60) }}
{{- else }}{{ $length = printf "%d seconds" $after }}
{{- end }}
{{- replace $stated (printf "%s %s" (substr 0 3 $stated) $length) .description }}
{{- else }}
{{- .description }}
{{- end }}
{{- end }}
