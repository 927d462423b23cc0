# class: file-api
# tries: swap a directory for a symlink to the host's secret directory while listing it
# oracle: secret (a listing)
# modes: files
# step: wait 0.3
# step: list d x40
# include: _racer.py
A, B, NAME = 'real', '@@SECRET_DIR@@', 'd'
