#!/usr/bin/env bash
# Creates (or reuses) the project's virtualenv (third-party packages only) and links it at ./.venv.
# The venv is cached on the machine, keyed by the hash of requirements.lock + pyproject.toml,
# so a fresh clone on a warm machine is ready in seconds; only the first run downloads.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
cache_root="${SIMPLEMEM_CACHE_DIR:-$HOME/.cache/simplemem}"
py="${SIMPLEMEM_PYTHON:-python3.11}"
command -v "$py" >/dev/null 2>&1 || py=python3

# uv from PATH, else from the interpreter's user site (installed quietly once: pip's notices about
# its own version, the root user or a script folder off PATH are not the user's business here).
uv() {
  if type -P uv >/dev/null; then command uv "$@"; else "$py" -m uv "$@"; fi
}
if ! type -P uv >/dev/null && ! "$py" -m uv --version >/dev/null 2>&1; then
  "$py" -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --root-user-action=ignore uv >/dev/null
fi

key="$(cat requirements.lock pyproject.toml | sha256sum | cut -c1-16)"
venv="$cache_root/venvs/$key"
if [ ! -f "$venv/.complete" ]; then
  echo "bootstrap: building venv $venv (first run on this machine downloads the packages)" >&2
  rm -rf "$venv"
  mkdir -p "$cache_root/venvs"
  uv venv --quiet --python "$py" "$venv"
  # run from the repo: uv reads pyproject.toml's [tool.uv] here, which keeps the model package from
  # pulling sentence-transformers and torch (CUDA) back in
  VIRTUAL_ENV="$venv" uv pip install --quiet -r requirements.lock
  touch "$venv/.complete"
fi
# Compiled bytecode, once per venv: a process that may not write .pyc files (PYTHONDONTWRITEBYTECODE,
# a read-only venv) would otherwise compile pandas, pymilvus, numpy... on every start (a query: 3.7 s
# instead of 1.5 s).
if [ ! -f "$venv/.compiled" ]; then
  "$venv/bin/python" -m compileall -q -j 0 "$venv/lib" >/dev/null 2>&1 || true
  touch "$venv/.compiled"
fi
# The project itself is NOT installed into the shared venv (an editable install would point every
# clone on the machine at whichever clone bootstrapped last): bin/simplemem and bin/test put this
# clone on PYTHONPATH instead.
if VIRTUAL_ENV="$venv" uv pip show --quiet simplemem >/dev/null 2>&1; then
  VIRTUAL_ENV="$venv" uv pip uninstall --quiet simplemem
fi
ln -sfn "$venv" .venv
echo "$venv"
