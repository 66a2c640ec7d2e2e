{{/*
Sidecar mode: named templates a model chart includes into its own Pod template.

The model chart declares this chart as a dependency with mode: sidecar, and passes the
dependency's context, .Subcharts.driftwatch (Helm >= 3.7), to each template, so that names,
values and the settings checksum are this chart's own:

  # model chart, Chart.yaml
  dependencies:
    - name: driftwatch
      version: 0.4.0
      repository: file://../driftwatch   # a path to this chart, or the repository it is published to
  # model chart, values.yaml
  driftwatch:
    mode: sidecar
    settings:
      events: {model_source: constant, model_constant: fraud-v2}
      kafka: {bootstrap_servers: [kafka:9092], topics: [fraud-v2-scores]}
  # model chart, templates/deployment.yaml (Pod template)
  metadata:
    labels:
      {{- include "driftwatch.sidecar.podLabels" .Subcharts.driftwatch | nindent 8 }}
    annotations:
      {{- include "driftwatch.sidecar.podAnnotations" .Subcharts.driftwatch | nindent 8 }}
  spec:
    containers:
      - name: model
        ...
      {{- include "driftwatch.sidecar.container" .Subcharts.driftwatch | nindent 6 }}
    volumes:
      {{- include "driftwatch.sidecar.volumes" .Subcharts.driftwatch | nindent 6 }}

The dependency itself renders the settings ConfigMap, the Service that selects the Pods
carrying driftwatch.sidecar.podLabels, and the optional PVC, ServiceMonitor, PrometheusRule
and dashboard; no Deployment. tests/helm/fixtures/model-chart is a complete example.
*/}}

{{- define "driftwatch.sidecar.check" -}}
{{- if ne .Values.mode "sidecar" }}
{{- fail (printf "driftwatch.sidecar.* templates need the driftwatch chart in sidecar mode (set driftwatch.mode: sidecar in the model chart's values), got mode %q" .Values.mode) }}
{{- end }}
{{- include "driftwatch.validate" . }}
{{- end }}

{{/* The driftwatch container, as one item of the Pod's containers list. */}}
{{- define "driftwatch.sidecar.container" -}}
{{- include "driftwatch.sidecar.check" . }}
{{- include "driftwatch.container" . }}
{{- end }}

{{/* The volumes the container mounts (settings, /tmp, checkpoint, TLS Secrets), as list items. */}}
{{- define "driftwatch.sidecar.volumes" -}}
{{- include "driftwatch.sidecar.check" . }}
{{- include "driftwatch.volumes" . }}
{{- end }}

{{/* Pod labels: the sidecar-mode Service selects the Pods by this label. */}}
{{- define "driftwatch.sidecar.podLabels" -}}
{{ include "driftwatch.sidecarLabelKey" . }}: {{ include "driftwatch.fullname" . }}
{{- end }}

{{/* Pod annotations: the settings checksum, so that a settings change rolls the model's Pods. */}}
{{- define "driftwatch.sidecar.podAnnotations" -}}
checksum/driftwatch-config: {{ include "driftwatch.configChecksum" . }}
{{- end }}
