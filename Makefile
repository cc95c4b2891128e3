# Convenience wrappers; the README's two commands are the scripts themselves.
.PHONY: demo test build
demo: ; bash scripts/demo.sh
test: ; bash scripts/test.sh
build: ; bash scripts/build.sh
