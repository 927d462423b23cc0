echo "shell: $(id -un) in $(pwd) on $(hostname)"
ls -la
