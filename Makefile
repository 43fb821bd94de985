# kgagent — the two commands of the README:
#   make demo   runs the main job on embedded defaults (serve --demo)
#   make test   installs what the tests need and runs every test
.PHONY: demo test lint bench build

demo:
	go run ./cmd/kgagent serve --demo

build:
	go build -o bin/kgagent ./cmd/kgagent

test:
	bash deploy/test.sh

lint:
	go vet ./...
	go tool staticcheck ./...

bench:
	bash deploy/bench.sh
