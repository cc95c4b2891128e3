# The peer, sourced by the benchmarks that run llama.cpp beside ferry: fetches the pinned release
# (npm: node-llama-cpp's prebuilt CPU libraries, one per instruction set, and its source bundle)
# into $PEERS (default build/peers) and builds llama-bench and llama-batched-bench against them.
# Defines LIB (the libraries' folder) and llama CMD... (runs a tool from LIB, where it finds the
# CPU backend for this machine), and prints the build it uses.
VERSION=3.21.1  # node-llama-cpp's release; its bundle is llama.cpp's source of that build
PEERS="${PEERS_DIR:-build/peers}"
mkdir -p "$PEERS"
PEERS="$(realpath "$PEERS")"
LIB="$PEERS/pkg/package/bins/linux-x64"
if [ ! -f "$LIB/libllama.v0.4.0.so" ]; then
  (cd "$PEERS" && npm pack --silent "@node-llama-cpp/linux-x64@$VERSION" "node-llama-cpp@$VERSION" >/dev/null)
  mkdir -p "$PEERS/pkg" "$PEERS/src"
  tar -xzf "$PEERS/node-llama-cpp-linux-x64-$VERSION.tgz" -C "$PEERS/pkg"
  tar -xzf "$PEERS/node-llama-cpp-$VERSION.tgz" -C "$PEERS/src"
fi
if [ ! -d "$PEERS/llama.cpp/tools" ]; then
  git clone -q "$PEERS/src/package/llama/gitRelease.bundle" "$PEERS/llama.cpp"
fi
for tool in llama-bench batched-bench; do
  bin="$PEERS/bin/llama-${tool#llama-}"
  [ -x "$bin" ] && continue
  mkdir -p "$PEERS/bin"
  (cd "$PEERS/llama.cpp" && g++ -std=c++17 -O2 -DNDEBUG tools/$tool/*.cpp -Iinclude -Iggml/include -Icommon -Ivendor \
    "$LIB/libllama.v0.4.0.so" "$LIB/libllama-common.so" "$LIB/libggml.v0.4.0.so" "$LIB/libggml-base.so" \
    -Wl,-rpath,"$LIB" -lpthread -o "$bin")
done
# The tools load the CPU backend for this machine's instruction set from the library folder.
llama() { (cd "$LIB" && "$@"); }
echo "llama.cpp: $(cd "$PEERS/llama.cpp" && git log -1 --format=%h) ($(llama "$PEERS/bin/llama-bench" --help 2>&1 | sed -n 's/.*loaded CPU backend from .*\/\(libggml-cpu-[a-z0-9]*\)\.so.*/\1/p' | head -1))"
