#!/usr/bin/env python3
# mousecat: enables the DECSET modes given as arguments (e.g. 1002 1006),
# then prints every read from the terminal as one line "IN <hex>", so a
# test sees exactly the bytes a mouse report delivered. A read of "q"
# alone quits. Used by orchestrator's mouse tests.
import os
import sys
import termios
import tty

fd = sys.stdin.fileno()
old = termios.tcgetattr(fd)
tty.setraw(fd)
try:
    for mode in sys.argv[1:]:
        os.write(1, b"\x1b[?" + mode.encode() + b"h")
    os.write(1, b"READY " + " ".join(sys.argv[1:]).encode() + b"\r\n")
    while True:
        data = os.read(fd, 4096)
        if not data or data == b"q":
            break
        os.write(1, b"IN " + data.hex().encode() + b"\r\n")
finally:
    termios.tcsetattr(fd, termios.TCSADRAIN, old)
