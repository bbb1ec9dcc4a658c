#!/usr/bin/env bash
# Run here, on a machine with our Debian packages, before handing the tree to a GPU machine
# (docs/gpu.md): copies the one header-only dependency qgpu-gpu-record has, nlohmann-json, into
# the git-ignored build-gpu-deps/include/nlohmann/. Take build-gpu-deps/ along with the tree (the
# device tool: carry it; otherwise rsync/scp it); ci/gpu-record.sh uses it when the GPU machine
# has no nlohmann-json of its own. About 1 MB.
#
# Where qgpu is built (build/harness/qgpu), it also exports 200 random CUDA kernels for the GPU
# (`qgpu gpu export --random 200 --seed 1`: reports/gpu/random/, git-ignored, about a minute;
# docs/gpu.md "Random kernels on the GPU"), which ci/gpu-record.sh then records after the
# catalog: carry it to the GPU machine too.
#
# Usage: ci/gpu-prepare.sh   ($QGPU_JSON_INCLUDE_DIR: a folder holding nlohmann/json.hpp, if not
#                            /usr/include or /usr/local/include)
# Exit code: 0 copied (and exported), 2 nlohmann-json not found, else the export's.
set -euo pipefail
cd "$(dirname "$0")/.."
src=""
for d in "${QGPU_JSON_INCLUDE_DIR:-}" /usr/include /usr/local/include; do
  if [ -n "$d" ] && [ -f "$d/nlohmann/json.hpp" ]; then src="$d"; break; fi
done
if [ -z "$src" ]; then
  echo "nlohmann/json.hpp not found: install nlohmann-json3-dev (ci/install-deps.sh)" >&2
  exit 2
fi
dest=build-gpu-deps/include
rm -rf "$dest/nlohmann"
mkdir -p "$dest"
cp -r "$src/nlohmann" "$dest/"
echo "copied $src/nlohmann to $dest/nlohmann ($(du -sh "$dest/nlohmann" | cut -f1));" \
  "take build-gpu-deps/ to the GPU machine with the tree"
if [ -x build/harness/qgpu ]; then
  build/harness/qgpu gpu export --random 200 --seed 1 --out reports/gpu/random
else
  echo "no build/harness/qgpu: the random kernels are not exported (ci/build.sh, then run again)"
fi
