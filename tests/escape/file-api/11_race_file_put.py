# class: file-api
# tries: swap a name between a plain file and a symlink to a host file while uploading to it 40 times
# oracle: host-files
# modes: files
# step: wait 0.3
# step: put r x40
# include: _racer.py
A, B, NAME = 'plainfile', '@@VICTIM@@', 'r'
