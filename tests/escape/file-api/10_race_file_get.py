# class: file-api
# tries: swap a name between a plain file and a symlink to the canary while downloading it 40 times
# oracle: secret
# modes: files
# step: wait 0.3
# step: get r x40
# include: _racer.py
A, B, NAME = 'plainfile', '@@SECRET@@', 'r'
