{{/* Names and labels. */}}
{{- define "senpai.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "senpai.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "senpai.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "senpai.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "senpai.selectorLabels" -}}
app.kubernetes.io/name: {{ include "senpai.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "senpai.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "senpai.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: senpai
{{- end -}}

{{/* The wrapper's Deployment, ServiceAccount, Role and RoleBinding. */}}
{{- define "senpai.wrapperName" -}}
{{- printf "%s-wrapper" (include "senpai.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "senpai.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "senpai.wrapperName" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Job pods get their own ServiceAccount with no Role and no API token. */}}
{{- define "senpai.jobServiceAccountName" -}}
{{- printf "%s-job" (include "senpai.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "senpai.configMapName" -}}
{{- printf "%s-config" (include "senpai.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "senpai.claimName" -}}
{{- default (printf "%s-data" (include "senpai.fullname" .)) .Values.persistence.existingClaim -}}
{{- end -}}

{{/* "repository:tag" (or "repository@sha256:...") of a role; tag "" is the chart's appVersion. Verifier "" falls back to the student image. */}}
{{- define "senpai.image" -}}
{{- $root := index . 0 -}}
{{- $img := index $root.Values.images (index . 1) -}}
{{- if and (eq (index . 1) "verifier") (not $img.repository) -}}
{{- $img = $root.Values.images.student -}}
{{- end -}}
{{- $tag := default $root.Chart.AppVersion $img.tag -}}
{{- printf "%s%s%s" $img.repository (ternary "" ":" (hasPrefix "@" $tag)) $tag -}}
{{- end -}}

{{/* The env vars filled from Secrets, as fleet.secret_env entries: [{env, secret, key, optional}]. */}}
{{- define "senpai.secretEnv" -}}
{{- $out := list -}}
{{- with .Values.secrets.github -}}{{- if .name -}}
{{- $out = append $out (dict "env" "GITHUB_TOKEN" "secret" .name "key" .key "optional" false) -}}
{{- end -}}{{- end -}}
{{- with .Values.secrets.wandb -}}{{- if .name -}}
{{- $out = append $out (dict "env" "WANDB_API_KEY" "secret" .name "key" .key "optional" false) -}}
{{- end -}}{{- end -}}
{{- range .Values.secrets.llm -}}
{{- $out = append $out (dict "env" .env "secret" .name "key" .key "optional" (default false .optional)) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* Checks that need more than one value (values.schema.json checks each value alone). */}}
{{- define "senpai.validate" -}}
{{- $envs := list -}}
{{- range .Values.secrets.llm -}}{{- $envs = append $envs .env -}}{{- end -}}
{{- range $role := list "advisor" "student" -}}
{{- $rt := index $.Values.runtime $role -}}
{{- if eq $rt.kind "openhands" -}}
{{- if not $rt.llm.model -}}
{{- fail (printf "runtime.%s.kind is openhands: set runtime.%s.llm.model (a LiteLLM model name)" $role $role) -}}
{{- end -}}
{{- $keyEnv := default "LLM_API_KEY" $rt.llm.apiKeyEnv -}}
{{- /* a baseUrl server (vLLM, llama.cpp) may need no key: the runtime then calls it keyless */ -}}
{{- if and (not $rt.llm.baseUrl) (not (has $keyEnv $envs)) -}}
{{- fail (printf "runtime.%s.llm.apiKeyEnv %s is not filled by any secrets.llm entry: add {env: %s, name: <secret>, key: <key>}" $role $keyEnv $keyEnv) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $role, $img := .Values.images -}}
{{- if and (kindIs "map" $img) (eq (toString $img.tag) "latest") -}}
{{- fail (printf "images.%s.tag is latest: pin a version (or a digest) so every Job runs the same code" $role) -}}
{{- end -}}
{{- end -}}
{{- if gt (len .Release.Name) 40 -}}
{{- fail (printf "release name %s is %d characters: senpai names its Jobs after it, use at most 40" .Release.Name (len .Release.Name)) -}}
{{- end -}}
{{- with .Values.holdout -}}
{{- if and .secret .claim -}}
{{- fail "holdout: set secret or claim, not both" -}}
{{- end -}}
{{- if and .subPath (not .claim) -}}
{{- fail "holdout.subPath needs holdout.claim" -}}
{{- end -}}
{{- if and .claim (eq .claim (include "senpai.claimName" $)) -}}
{{- fail (printf "holdout.claim %s is the shared data claim that every Job mounts: students would read the holdout" .claim) -}}
{{- end -}}
{{- $mp := trimSuffix "/" .mountPath -}}
{{- if or (eq $mp "/work") (hasPrefix "/work/" $mp) (has $mp (list "/data" "/home/senpai" "/tmp" "/etc/senpai")) -}}
{{- fail (printf "holdout.mountPath %s collides with a Job mount (/work, /data, /home/senpai, /tmp, /etc/senpai)" .mountPath) -}}
{{- end -}}
{{- end -}}
{{- /* Jobs' env reaches code agents wrote: no name that a Secret fills (the schema refuses secret-looking names) */ -}}
{{- $secretEnvs := list -}}
{{- range (include "senpai.secretEnv" . | fromJsonArray) -}}{{- $secretEnvs = append $secretEnvs .env -}}{{- end -}}
{{- range .Values.jobs.extraEnv -}}
{{- if has .name $secretEnvs -}}
{{- fail (printf "jobs.extraEnv %s is filled from a Secret (secrets.*): Jobs' extraEnv reaches code agents wrote, so it never carries a credential" .name) -}}
{{- end -}}
{{- end -}}
{{- $names := list -}}
{{- range .Values.students -}}
{{- if has .name $names -}}{{- fail (printf "students: the name %s is used twice" .name) -}}{{- end -}}
{{- $names = append $names .name -}}
{{- end -}}
{{- end -}}

{{/* Role runtime as the harness config's RoleRuntime. */}}
{{- define "senpai.roleRuntime" -}}
{{- /* budget: the deprecated name of turn (NOTES.txt warns); a field it sets is read over turn's, a 0
     too (sprig's merge would take a 0 for unset). turn always holds the chart's defaults, so the
     chart cannot tell the user's turn from them, as the harness config's loader does (a ConfigError) */ -}}
{{- $b := dict -}}
{{- range $k, $v := (.turn | default dict) -}}{{- $_ := set $b $k $v -}}{{- end -}}
{{- range $k, $v := (.budget | default dict) -}}{{- $_ := set $b $k $v -}}{{- end -}}
{{- $rt := dict "kind" .kind "turn" (dict "llm_calls" (int $b.llmCalls) "tokens" (int $b.tokens) "dollars" (float64 $b.dollars) "wall_seconds" (int $b.wallSeconds)) -}}
{{- with .llm -}}{{- if .model -}}
{{- $llm := dict "model" .model "api_key_env" (default "LLM_API_KEY" .apiKeyEnv) -}}
{{- if .baseUrl -}}{{- $_ := set $llm "base_url" .baseUrl -}}{{- end -}}
{{- if .reasoningEffort -}}{{- $_ := set $llm "reasoning_effort" .reasoningEffort -}}{{- end -}}
{{- if hasKey . "inputCostPerToken" -}}{{- $_ := set $llm "input_cost_per_token" (float64 .inputCostPerToken) -}}{{- end -}}
{{- if hasKey . "outputCostPerToken" -}}{{- $_ := set $llm "output_cost_per_token" (float64 .outputCostPerToken) -}}{{- end -}}
{{- if hasKey . "timeout" -}}{{- $_ := set $llm "timeout" (int .timeout) -}}{{- end -}}
{{- /* hasKey: 0 retries is a choice, not "unset" */ -}}
{{- if hasKey . "numRetries" -}}{{- $_ := set $llm "num_retries" (int .numRetries) -}}{{- end -}}
{{- if hasKey . "maxOutputTokens" -}}{{- $_ := set $llm "max_output_tokens" (int .maxOutputTokens) -}}{{- end -}}
{{- if .extraBody -}}{{- $_ := set $llm "extra_body" .extraBody -}}{{- end -}}
{{- $_ := set $rt "llm" $llm -}}
{{- end -}}{{- end -}}
{{- toJson $rt -}}
{{- end -}}

{{/* podSecurityContext as YAML; fsGroup left out on OpenShift, whose restricted SCC assigns one from the namespace's range. */}}
{{- define "senpai.podSecurityContext" -}}
{{- $sc := deepCopy .Values.podSecurityContext -}}
{{- if .Capabilities.APIVersions.Has "security.openshift.io/v1" -}}
{{- $_ := unset $sc "fsGroup" -}}
{{- end -}}
{{- toYaml $sc -}}
{{- end -}}

{{/* The secret env of the wrapper and the helm test pod: every secrets.* entry by reference. */}}
{{- define "senpai.secretEnvVars" -}}
{{- range (include "senpai.secretEnv" . | fromJsonArray) }}
- name: {{ .env }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret | quote }}
      key: {{ .key | quote }}
      {{- if .optional }}
      optional: true
      {{- end }}
{{- end }}
{{- end -}}
