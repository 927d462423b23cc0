# class: file-api
# tries: swap a directory for a symlink to a host directory while uploading beneath it
# oracle: host-files
# modes: files
# step: wait 0.3
# step: put d/victim.txt x40
# include: _racer.py
A, B, NAME = 'real', '@@VICTIM_DIR@@', 'd'
