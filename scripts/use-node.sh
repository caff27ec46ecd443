# Source this from the repository root (`. scripts/use-node.sh`) to have the project's Node 24
# and pnpm first on PATH in the current shell; ./dev installs them where they are missing.
PATH=$(./dev printenv PATH) && export PATH
ap_nodedir=$(./dev printenv npm_config_nodedir || true)
[ -z "$ap_nodedir" ] || export npm_config_nodedir="$ap_nodedir"
unset ap_nodedir
