# Debian's chromium, for the chat page's browser test (gateway/web_test.go).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q chromium >/dev/null
  else
    sudo apt-get update -q >/dev/null && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
  fi
fi
export KGAGENT_REQUIRE_BROWSER=1
