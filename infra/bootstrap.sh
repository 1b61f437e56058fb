#!/usr/bin/env bash
# Creates (or reuses) the project's virtualenv and links it at ./.venv.
# The venv is cached on the machine, keyed by the hash of requirements.lock + pyproject.toml,
# so a fresh clone on a warm machine is ready in seconds; only the first run downloads.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
cache_root="${SIMPLEMEM_CACHE_DIR:-$HOME/.cache/simplemem}"
py="${SIMPLEMEM_PYTHON:-python3.11}"
command -v "$py" >/dev/null 2>&1 || py=python3

if ! command -v uv >/dev/null 2>&1; then
  "$py" -m pip install --quiet --disable-pip-version-check uv
fi

key="$(cat requirements.lock pyproject.toml | sha256sum | cut -c1-16)"
venv="$cache_root/venvs/$key"
if [ ! -f "$venv/.complete" ]; then
  echo "bootstrap: building venv $venv (first run on this machine downloads the packages)" >&2
  rm -rf "$venv"
  mkdir -p "$cache_root/venvs"
  uv venv --quiet --python "$py" "$venv"
  VIRTUAL_ENV="$venv" uv pip install --quiet -r requirements.lock
  touch "$venv/.complete"
fi
# The project itself: an editable install pointing at this clone (cheap, redone every time).
VIRTUAL_ENV="$venv" uv pip install --quiet --no-deps -e .
ln -sfn "$venv" .venv
echo "$venv"
