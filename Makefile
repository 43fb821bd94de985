# kgagent — the commands of the README:
#   make demo    builds bin/kgagent, fetches the semantic model's weights into
#                the user cache (deploy/minilm.sh) and runs it on embedded
#                defaults (serve --demo)
#   make test    installs what the tests need and runs every test (deploy/test.sh)
#   make llm     starts the local LLM the tests use (Ollama, SmolLM2 and
#                Gemma-3) and prints the serve line that uses it
#   make check   the quick loop: build, deadcode, vet, staticcheck, the
#                short tests of the packages that need no outside service,
#                and -race on the packages changed against CHECK_BASE (main)
.PHONY: demo test check llm lint deadcode bench build

demo: build
	@bash deploy/minilm.sh >/dev/null || echo "could not fetch the semantic model's weights (deploy/minilm.sh); search stays lexical (and --embedder minilm runs on the lexical embedder) without them"
	@echo "starting bin/kgagent serve --demo (Ctrl-C stops it)"
	@bin/kgagent serve --demo

# go build prints nothing while it compiles; say so, since a first build
# (modules downloaded, ~400 packages compiled) takes minutes on a slow machine.
build:
	@echo "compiling bin/kgagent (go build; the first build downloads the modules and takes a few minutes)"
	@go build -o bin/kgagent ./cmd/kgagent
	@echo "built bin/kgagent"

test:
	bash deploy/test.sh

llm:
	@bash deploy/ollama/local.sh

# make check's -race pass runs on the packages changed since the branch left
# CHECK_BASE (git merge-base): committed since, modified, or new and untracked
# (cmd/kgagent aside).
CHECK_BASE ?= main

check: build deadcode
	go vet ./...
	go tool staticcheck ./...
	go test -short $$(go list ./... | grep -v /cmd/kgagent)
	@base=$$(git merge-base $(CHECK_BASE) HEAD 2>/dev/null || git merge-base origin/$(CHECK_BASE) HEAD 2>/dev/null); \
	if [ -z "$$base" ]; then echo "no $(CHECK_BASE) or origin/$(CHECK_BASE) to compare with: -race only on untracked packages (set CHECK_BASE)"; fi; \
	pkgs=$$( { [ -z "$$base" ] || git diff --name-only $$base -- '*.go'; git ls-files --others --exclude-standard -- '*.go'; } \
		| grep -v -e '/testdata/' -e '^cmd/kgagent/' | xargs -r -n1 dirname | sort -u \
		| while read -r d; do [ -d "$$d" ] && echo "./$$d"; done); \
	if [ -z "$$pkgs" ]; then echo "no Go package changed against $(CHECK_BASE): no -race pass"; \
	else echo "go test -short -race" $$pkgs; go test -short -race $$pkgs; fi

lint: deadcode
	go vet ./...
	go tool staticcheck ./...

# deadcode (golang.org/x/tools/cmd/deadcode, a go.mod tool like staticcheck)
# lists functions no main program and no test reaches. -test makes the tests
# roots too: test helpers (corpustest, openaitest, ...) and exported API that
# only tests and other programs call are then live, while code nothing calls
# at all is reported. Example functions without an // Output: line are
# compiled but never run (they document APIs that need a server, e.g.
# graphrag/neo4j ExampleOpen), so they are filtered out. deadcode exits 0
# whatever it finds, so any line left fails the target.
deadcode:
	@out=$$(go tool deadcode -test ./...) || exit 1; \
	out=$$(printf '%s\n' "$$out" | grep -v -e '^$$' -e ': unreachable func: Example'); \
	if [ -n "$$out" ]; then echo "$$out"; echo "deadcode: delete the functions above (or call them)"; exit 1; fi

bench:
	bash deploy/bench.sh
