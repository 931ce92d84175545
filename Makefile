# make test = lint + typecheck + generated-code check + every test. CI runs it via .ci/run.
.PHONY: install test lint typecheck proto proto-check unit sim-sweep bench

install:
	npm ci

proto:
	npm run gen:proto

proto-check:
	npm run --silent check:proto

lint:
	npx eslint .

typecheck:
	npx tsc --noEmit -p tsconfig.json

unit:
	npx mocha

test: lint typecheck proto-check unit

bench:
	npm run bench
