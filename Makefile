# make test = format check + lint + typecheck + generated-code checks (proto, SDK) + lockfile check + every test. CI runs it via .ci/run.
.PHONY: install test format format-check lint typecheck proto proto-check sdk-check lock-check build unit bench cluster jepsen image-context image image-test upgrade-test sentinel-test

install:
	npm install

proto:
	npm run gen:proto

proto-check:
	npm run --silent check:proto

format:
	npx prettier --write .

format-check:
	npx prettier --check .

lint:
	npx eslint .

typecheck:
	npx tsc --noEmit -p tsconfig.json

sdk-check:
	npm run --silent sdk:check

# package-lock.json is complete (every platform's optional packages): npm install on a fresh clone changes nothing.
lock-check:
	npm run --silent check:lock

# The compiled app in dist/ (scripts/build.mjs); the image is built from it.
build:
	npm run --silent build

unit:
	npx mocha

test: format-check lint typecheck proto-check sdk-check lock-check unit

bench:
	npm run bench

# A local three-node cluster under .cluster/ in the foreground (Ctrl-C stops it); see cli/.
cluster:
	node bin/svc.js cluster $(ARGS)

# The Jepsen-style run, long form (as root: network namespaces and iptables; test/jepsen/README.md).
# ARGS e.g. `--seed 7`, `--rounds 40`, `--schedule partition-leader,pause-leader`.
jepsen:
	npx tsx test/jepsen/main.ts $(ARGS)

# The committed Kubernetes example (deploy/kubernetes/example/svc.yaml), rendered again from its own header line.
EXAMPLE_ARGS = --namespace svc --cluster-id 0123456789abcdef --founders 3 --replicas 3 --image registry.example/svc:0.1.0 --run-image registry.example/svc-agent:1 --workspace-claim svc-workspaces
manifests-example:
	{ echo '# Rendered by make manifests-example; edit cli/manifests/, not this file (test/deploy/manifests.test.ts checks it).'; \
	  echo '# Secrets are not here: svc manifests secrets writes them (docs/operations.md, "On Kubernetes").'; \
	  echo '# svc manifests render $(EXAMPLE_ARGS)'; \
	  node bin/svc.js manifests render $(EXAMPLE_ARGS); } > deploy/kubernetes/example/svc.yaml

# The node image (deploy/Containerfile). The context is the compiled app (npm run build, scripts/build.mjs: tsc's
# JavaScript laid out as the repository, and the files it reads) with production dependencies only (`npm ci --omit=dev`).
IMAGE ?= localhost/svc:$(shell node -p "require('./package.json').version")
image-context:
	rm -rf .image-context
	node scripts/build.mjs .image-context
	cd .image-context && npm ci --omit=dev --ignore-scripts --prefer-offline --no-audit --no-fund

image: image-context
	podman build -f deploy/Containerfile -t $(IMAGE) $(IMAGE_BUILD_ARGS) .image-context

# Builds the image on a base made from this host's node and runs a one-node cluster in it (podman; minutes).
image-test:
	SVC_IMAGE_TEST=1 npx mocha --no-config --node-option import=tsx --timeout 900000 test/deploy/image.test.ts

# The API on a Redis that fails over: a primary, a replica and three sentinels, the primary SIGKILLed under load (a minute).
sentinel-test:
	SVC_SENTINEL_TEST=1 npx mocha --no-config --node-option import=tsx --timeout 300000 test/api/redis-sentinel.test.ts

# A three-node cluster on an older commit (UPGRADE_FROM, default 29c7609, a git worktree beside HEAD) upgraded to
# HEAD one member at a time with writes flowing, then one rolled back; prints the figures (minutes; git needed).
upgrade-test:
	SVC_UPGRADE_TEST=1 npx mocha --no-config --node-option import=tsx --timeout 900000 test/upgrade/upgrade.test.ts
