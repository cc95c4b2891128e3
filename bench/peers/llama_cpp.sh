# The peer, sourced by the benchmarks that run llama.cpp beside ferry: fetches the pinned release
# (npm: node-llama-cpp's prebuilt CPU libraries, one per instruction set, and its source bundle)
# into $PEERS (default build/peers) and builds its tools against them: PEER_TOOLS (default
# "llama-bench batched-bench quantize server"; the test suite builds "quantize" only).
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
  git -c advice.detachedHead=false clone -q "$PEERS/src/package/llama/gitRelease.bundle" "$PEERS/llama.cpp"
fi
PEER_TOOLS="${PEER_TOOLS:-llama-bench batched-bench quantize server}"
for tool in $PEER_TOOLS; do
  [ "$tool" = server ] && continue  # below
  bin="$PEERS/bin/llama-${tool#llama-}"
  [ -x "$bin" ] && continue
  mkdir -p "$PEERS/bin"
  (cd "$PEERS/llama.cpp" && g++ -std=c++17 -O2 -DNDEBUG tools/$tool/*.cpp -Iinclude -Iggml/include -Icommon -Ivendor \
    "$LIB/libllama.v0.4.0.so" "$LIB/libllama-common.so" "$LIB/libggml.v0.4.0.so" "$LIB/libggml-base.so" \
    -Wl,-rpath,"$LIB" -lpthread -o "$bin")
done
# llama-server, built from tools/server of the same source against the same prebuilt libraries. The
# npm bundle is llama.cpp's whole tree, so what the server's CMake targets link beyond the prebuilt
# libraries is compiled here from it: cpp-httplib as vendored (vendor/cpp-httplib, 0.54.1, with the
# server's compile definitions; Debian's libcpp-httplib-dev is 0.11, older than the API the server
# uses, e.g. ThreadPool(n, max_threads)), vendor/hash, and libmtmd (tools/mtmd; the prebuilt set has none; it serves images and audio,
# unused here, but server-context links it). The web UI is left out: tools/ui/embed.cpp, run without
# an asset folder, writes the empty asset table (ui.cpp/ui.h) a build without the UI gets; / then
# answers 404. LLAMA_SUBPROCESS as the prebuilt libllama-common was built (it changes a struct in
# common/subproc.h). About 2 minutes of compiling on 2 cores, once.
if [[ " $PEER_TOOLS " == *" server "* ]] && [ ! -x "$PEERS/bin/llama-server" ]; then
  SB="$PEERS/server-build"
  mkdir -p "$SB/ui" "$PEERS/bin"
  (
    cd "$PEERS/llama.cpp" || exit 1
    g++ -std=c++17 -O2 tools/ui/embed.cpp -o "$SB/ui/embed"
    "$SB/ui/embed" "$SB/ui/ui.cpp" "$SB/ui/ui.h" >/dev/null
    cxx="g++ -std=c++17 -O2 -DNDEBUG -Iinclude -Iggml/include -Icommon -Ivendor"
    httplib="-DCPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH=1048576 -DCPPHTTPLIB_LISTEN_BACKLOG=512"
    httplib+=" -DCPPHTTPLIB_REQUEST_URI_MAX_LENGTH=32768 -DCPPHTTPLIB_TCP_NODELAY=1"
    {  # one line per object: compiler and flags|source (the mtmd list from its CMakeLists.txt)
      echo "$cxx -w $httplib|vendor/cpp-httplib/httplib.cpp"
      echo "$cxx -w -Ivendor/hash|vendor/hash/hash.cpp"
      echo "$cxx -w -Ivendor/hash -x c++|vendor/hash/sha1/sha1.c"
      echo "gcc -std=c11 -O2 -w -Ivendor/hash|vendor/hash/xxhash/xxhash.c"
      echo "gcc -std=c11 -O2 -w -Ivendor/hash|vendor/hash/sha256/sha256.c"
      for f in $(sed -n '/add_library(mtmd/,/)$/p' tools/mtmd/CMakeLists.txt | grep -o '[A-Za-z0-9_/.-]*\.cpp'); do
        echo "$cxx -Wno-cast-qual -DMTMD_VIDEO -Itools/mtmd|tools/mtmd/$f"
      done
      echo "$cxx|$SB/ui/ui.cpp"
      for f in tools/server/*.cpp; do
        echo "$cxx -DLLAMA_SUBPROCESS -Itools/server -Itools/mtmd -I. -I$SB/ui|$f"
      done
    } | while IFS='|' read -r cc src; do
      o="$SB/obj/$(echo "${src#"$SB"/}" | tr / _).o"
      [ -f "$o" ] || echo "mkdir -p $SB/obj && $cc -c $src -o $o.tmp && mv $o.tmp $o"
    done | xargs -r -d '\n' -n 1 -P "$(nproc)" sh -c
    g++ "$SB"/obj/*.o "$LIB/libllama-common.so" "$LIB/libllama.v0.4.0.so" "$LIB/libggml.v0.4.0.so" \
      "$LIB/libggml-base.so" -Wl,-rpath,"$LIB" -lpthread -o "$PEERS/bin/llama-server"
  )
fi
# The tools load the CPU backend for this machine's instruction set from the library folder.
llama() { (cd "$LIB" && "$@"); }
backend=""  # the CPU backend llama-bench loads (llama-quantize loads none)
[ -x "$PEERS/bin/llama-bench" ] && backend=" ($(llama "$PEERS/bin/llama-bench" --help 2>&1 |
  sed -n 's/.*loaded CPU backend from .*\/\(libggml-cpu-[a-z0-9]*\)\.so.*/\1/p' | head -1))"
echo "llama.cpp: $(cd "$PEERS/llama.cpp" && git log -1 --format=%h)$backend"
