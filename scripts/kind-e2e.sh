#!/usr/bin/env bash
# make kind-e2e: the chart on a real Kubernetes cluster (kind), end to end, with no keys.
#
# 1. creates a kind cluster ($KIND_CLUSTER, default senpai-e2e);
# 2. builds the wrapper and advisor images and `kind load`s them (this CPU-only run uses the advisor
#    image for student and verifier Jobs too; the CUDA student image is for GPU nodes);
# 3. runs the local forge inside the cluster (Deployment + Service `forge`, from the wrapper image:
#    `senpai forge serve`) behind a NetworkPolicy that admits only the release's pods (wrapper and
#    Jobs), creates the bot's token in it (`senpai forge token`), keeps it in the Secret
#    senpai-github, and seeds senpai/digits from examples/digits with it through a port-forward
#    (`senpai forge seed`);
# 4. installs charts/senpai with the search runtime, ONE CPU-only student (gpus 0), W&B offline,
#    secrets.github = senpai-github (GITHUB_TOKEN in the wrapper and every Job), and the digits
#    holdout (`seal_holdout`) in the Secret senpai-holdout as holdout.secret;
# 5. waits until `senpai ledger --json` (run in the wrapper pod) shows one decided experiment,
#    prints it, and deletes the cluster (KEEP_CLUSTER=1 keeps it for a look around).
#
# Needs docker (with a daemon), kind, kubectl, helm and curl on PATH, the repository's .venv (make
# creates it), and the Kubernetes fleet backend (senpai/fleet/kubernetes.py). It has not been run on
# the machines where senpai is developed: they have no Docker daemon and no cluster, so the chart is
# tested there by rendering it with the real Helm engine (tests/contract/test_helm_chart.py).
#
# Environment: IMAGE_REPO (senpai), IMAGE_TAG (the package version), DOCKER (docker), SENPAI
# (.venv/bin/senpai), KIND_CLUSTER (senpai-e2e), E2E_TIMEOUT seconds (1200), KEEP_CLUSTER (0).
set -euo pipefail

cd "$(dirname "$0")/.."
IMAGE_REPO=${IMAGE_REPO:-senpai}
IMAGE_TAG=${IMAGE_TAG:-$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)}
DOCKER=${DOCKER:-docker}
SENPAI=${SENPAI:-.venv/bin/senpai}
KIND_CLUSTER=${KIND_CLUSTER:-senpai-e2e}
E2E_TIMEOUT=${E2E_TIMEOUT:-1200}
NS=senpai-e2e
RELEASE=senpai
FORGE_PORT=18000

say() { printf '\n== %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 2; }

for tool in "$DOCKER" kind kubectl helm curl; do
  command -v "$tool" >/dev/null 2>&1 || die "make kind-e2e needs $tool on PATH (docker, kind, kubectl, helm and curl)"
done
"$DOCKER" info >/dev/null 2>&1 || die "no Docker daemon is reachable ('$DOCKER info' failed): start Docker or set DOCKER_HOST"
[ -x "$SENPAI" ] || die "$SENPAI not found: run through 'make kind-e2e', which creates .venv"
PYTHON=$(dirname "$SENPAI")/python

WORK=$(mktemp -d)
PF_PID=""
cleanup() {
  status=$?
  [ -n "$PF_PID" ] && kill "$PF_PID" 2>/dev/null || true
  if [ "$status" -ne 0 ] && kubectl config get-contexts "kind-$KIND_CLUSTER" >/dev/null 2>&1; then
    say "failed (exit $status): what the cluster shows"
    kubectl -n "$NS" get deploy,jobs,pods -o wide || true
    kubectl -n "$NS" logs "deploy/$RELEASE-wrapper" --tail=100 || true
    for pod in $(kubectl -n "$NS" get pods -o name 2>/dev/null || true); do
      printf -- '-- %s\n' "$pod"
      kubectl -n "$NS" logs "$pod" --all-containers --tail=40 || true
    done
  fi
  if [ "${KEEP_CLUSTER:-0}" = 1 ]; then
    say "keeping cluster $KIND_CLUSTER (kind delete cluster --name $KIND_CLUSTER)"
  else
    kind delete cluster --name "$KIND_CLUSTER" >/dev/null 2>&1 || true
  fi
  rm -rf "$WORK"
  exit "$status"
}
trap cleanup EXIT

say "kind cluster $KIND_CLUSTER"
kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER" || kind create cluster --name "$KIND_CLUSTER" --wait 120s
kubectl config use-context "kind-$KIND_CLUSTER" >/dev/null

say "images $IMAGE_REPO/{wrapper,advisor}:$IMAGE_TAG"
WRAPPER_IMAGE=$IMAGE_REPO/wrapper:$IMAGE_TAG
ADVISOR_IMAGE=$IMAGE_REPO/advisor:$IMAGE_TAG
"$DOCKER" build -f wrapper/Dockerfile -t "$WRAPPER_IMAGE" .
"$DOCKER" build -f advisor/Dockerfile -t "$ADVISOR_IMAGE" .
kind load docker-image --name "$KIND_CLUSTER" "$WRAPPER_IMAGE" "$ADVISOR_IMAGE"

say "local forge in the cluster"
kubectl create namespace "$NS" --dry-run=client -o yaml | kubectl apply -f -
kubectl -n "$NS" apply -f - <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: forge, labels: {app: forge}}
spec:
  replicas: 1
  selector: {matchLabels: {app: forge}}
  template:
    metadata: {labels: {app: forge}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 10001, fsGroup: 10001, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: forge
          image: $WRAPPER_IMAGE
          imagePullPolicy: Never
          args: [forge, serve, --data, /forge, --host, 0.0.0.0, --port, "8000"]
          env: [{name: HOME, value: /tmp}]
          ports: [{name: http, containerPort: 8000}]
          readinessProbe: {httpGet: {path: /health, port: http}, periodSeconds: 2}
          resources: {requests: {cpu: 100m, memory: 256Mi}, limits: {memory: 1Gi}}
          securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
          volumeMounts: [{name: data, mountPath: /forge}, {name: tmp, mountPath: /tmp}]
      volumes: [{name: data, emptyDir: {}}, {name: tmp, emptyDir: {}}]
---
apiVersion: v1
kind: Service
metadata: {name: forge}
spec:
  selector: {app: forge}
  ports: [{name: http, port: 8000, targetPort: http}]
---
# Only the release's pods (the wrapper and its Jobs) may reach the forge; kubectl port-forward
# and the kubelet's probes come from the node, which a NetworkPolicy does not block.
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: forge-ingress}
spec:
  podSelector: {matchLabels: {app: forge}}
  policyTypes: [Ingress]
  ingress:
    - from: [{podSelector: {matchLabels: {app.kubernetes.io/instance: $RELEASE}}}]
      ports: [{port: 8000, protocol: TCP}]
EOF
kubectl -n "$NS" rollout status deploy/forge --timeout=180s

say "the bot's forge token, in the Secret the chart gives the wrapper and every Job"
BOT_TOKEN=$(kubectl -n "$NS" exec deploy/forge -- senpai forge token --data /forge --user senpai --role owner)
[ -n "$BOT_TOKEN" ] || die "senpai forge token printed nothing"
printf '%s' "$BOT_TOKEN" | kubectl -n "$NS" create secret generic senpai-github --from-file=token=/dev/stdin \
  --dry-run=client -o yaml | kubectl apply -f - >/dev/null  # through stdin: the token stays out of argv

say "seed senpai/digits through a port-forward"
kubectl -n "$NS" port-forward svc/forge "$FORGE_PORT:8000" >"$WORK/port-forward.log" 2>&1 &
PF_PID=$!
for _ in $(seq 60); do
  curl -fsS "http://127.0.0.1:$FORGE_PORT/health" >/dev/null 2>&1 && break
  sleep 1
done
curl -fsS "http://127.0.0.1:$FORGE_PORT/health" >/dev/null || die "the forge is not reachable through the port-forward: $(cat "$WORK/port-forward.log")"
GITHUB_TOKEN="$BOT_TOKEN" "$SENPAI" forge seed --url "http://127.0.0.1:$FORGE_PORT" --repo senpai/digits --example examples/digits
kill "$PF_PID"; PF_PID=""

say "the sealed holdout in Secret senpai-holdout (mounted only by the verifier's score container)"
"$PYTHON" -c 'import pathlib, sys; from senpai.cli.digits_split import seal_holdout; seal_holdout(pathlib.Path(sys.argv[1]))' "$WORK/holdout"
kubectl -n "$NS" create secret generic senpai-holdout --from-file=holdout.csv="$WORK/holdout/holdout.csv" \
  --dry-run=client -o yaml | kubectl apply -f -

say "helm install $RELEASE (search runtime, one CPU-only student)"
cat >"$WORK/values.yaml" <<EOF
images:
  wrapper: {repository: $IMAGE_REPO/wrapper, tag: "$IMAGE_TAG"}
  advisor: {repository: $IMAGE_REPO/advisor, tag: "$IMAGE_TAG"}
  student: {repository: $IMAGE_REPO/advisor, tag: "$IMAGE_TAG"}
  verifier: {repository: $IMAGE_REPO/advisor, tag: "$IMAGE_TAG"}
  pullPolicy: Never
forge:
  baseUrl: http://forge.$NS.svc:8000
  repo: senpai/digits
secrets:
  github: {name: senpai-github, key: token}
holdout: {secret: senpai-holdout}
tracker: {project: senpai-e2e, mode: offline}
students:
  - {name: ada, gpus: 0}
resources:
  advisor: {requests: {cpu: 200m, memory: 512Mi}, limits: {memory: 2Gi}}
  student: {requests: {cpu: 500m, memory: 512Mi}, limits: {memory: 2Gi}}
  verifier: {requests: {cpu: 500m, memory: 512Mi}, limits: {memory: 2Gi}}
persistence: {size: 2Gi}
loop: {tickSeconds: 3, fullRefreshSeconds: 30, maxExperiments: 1}
EOF
helm upgrade --install "$RELEASE" charts/senpai -n "$NS" -f "$WORK/values.yaml" --wait --timeout 5m

say "waiting up to $E2E_TIMEOUT s for one decided experiment"
deadline=$((SECONDS + E2E_TIMEOUT))
while :; do
  if kubectl -n "$NS" exec "deploy/$RELEASE-wrapper" -- senpai ledger --json >"$WORK/ledger.json" 2>"$WORK/ledger.err" \
     && "$PYTHON" -c 'import json, sys; sys.exit(0 if any(e["state"] in ("merged", "closed") for e in json.load(open(sys.argv[1]))) else 1)' "$WORK/ledger.json"; then
    break
  fi
  [ "$SECONDS" -lt "$deadline" ] || die "no experiment decided after $E2E_TIMEOUT s (last ledger error: $(tail -3 "$WORK/ledger.err"))"
  printf '%s  jobs: %s\n' "$(date +%H:%M:%S)" \
    "$(kubectl -n "$NS" get jobs -l app.kubernetes.io/instance=$RELEASE --no-headers 2>/dev/null | awk '{printf "%s(%s) ", $1, $2}')"
  sleep 15
done

say "the decided experiment"
kubectl -n "$NS" exec "deploy/$RELEASE-wrapper" -- senpai ledger
"$PYTHON" - "$WORK/ledger.json" <<'EOF'
import json, sys
for e in json.load(open(sys.argv[1])):
    if e["state"] in ("merged", "closed"):
        d = e["decisions"][-1] if e.get("decisions") else {}
        print(f"pr: {e['pr']}\nstate: {e['state']}\nverdict: {d.get('verdict')}\nreason: {d.get('reason')}")
EOF
say "kind-e2e passed"
