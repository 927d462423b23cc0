# class: file-api
# tries: swap a directory for a symlink to the host's secret directory while downloading beneath it
# oracle: secret
# modes: files
# step: wait 0.3
# step: get d/canary.txt x40
# include: _racer.py
A, B, NAME = 'real', '@@SECRET_DIR@@', 'd'
