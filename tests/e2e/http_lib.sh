# Helpers for the tests of http(s) image sources (sourced, not run):
# Debian's nginx and tests/e2e/fault_http.py on loopback, each started with
# its config in the test's temp dir on a port the kernel picked, and stopped
# by its PID. The caller sets T (a temp dir) and calls http_cleanup from its
# EXIT trap.
HTTP_PIDS=()

http_cleanup() {
  for p in "${HTTP_PIDS[@]:-}"; do
    [ -n "$p" ] || continue
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
}

# A port free now (the kernel's pick; nginx cannot bind port 0 and say which).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# start_nginx ROOT [EXTRA_HTTP_CONF] [SSL_CERT SSL_KEY]: sets NGINX_PORT
# (and NGINX_SSL_PORT with a certificate), NGINX_LOG (one line per request:
# "STATUS BYTES_SENT RANGE").
start_nginx() {
  local root=$1 extra=${2:-} cert=${3:-} key=${4:-} dir
  dir=$(mktemp -d "$T/nginx.XXXXXX")
  for try in 1 2 3 4 5; do
    NGINX_PORT=$(free_port)
    local ssl=""
    if [ -n "$cert" ]; then
      NGINX_SSL_PORT=$(free_port)
      ssl="server { listen 127.0.0.1:$NGINX_SSL_PORT ssl; ssl_certificate $cert; ssl_certificate_key $key; root $root; $extra }"
    fi
    NGINX_LOG=$dir/access.log
    local user=""
    [ "$(id -u)" = 0 ] && user="user root;"  # workers read the test's 0700 temp dir
    cat >"$dir/nginx.conf" <<EOF
$user
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 64; }
http {
  log_format fp '\$status \$body_bytes_sent "\$http_range"';
  access_log $NGINX_LOG fp;
  client_body_temp_path $dir/body; proxy_temp_path $dir/proxy; fastcgi_temp_path $dir/fcgi;
  uwsgi_temp_path $dir/uwsgi; scgi_temp_path $dir/scgi;
  default_type application/octet-stream;
  server { listen 127.0.0.1:$NGINX_PORT; root $root; $extra }
  $ssl
}
EOF
    nginx -c "$dir/nginx.conf" -p "$dir" -g "daemon off;" 2>>"$dir/start.err" &
    local pid=$!
    for _ in $(seq 50); do
      if curl -s -o /dev/null "http://127.0.0.1:$NGINX_PORT/"; then
        HTTP_PIDS+=("$pid")
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  echo "nginx did not start: $(cat "$dir/start.err" "$dir/error.log" 2>/dev/null)"
  return 1
}

# start_fault ROOT CONFIG: sets FAULT_PORT, FAULT_LOG.
start_fault() {
  local root=$1 config=$2 dir
  dir=$(mktemp -d "$T/fault.XXXXXX")
  FAULT_LOG=$dir/log
  : >"$FAULT_LOG"
  python3 "$FLASHPIPE_SOURCE_DIR/tests/e2e/fault_http.py" "$root" "$dir/port" "$FAULT_LOG" "$config" 2>"$dir/err" &
  HTTP_PIDS+=("$!")
  for _ in $(seq 100); do
    [ -s "$dir/port" ] && break
    sleep 0.05
  done
  FAULT_PORT=$(cat "$dir/port")
}

# Body bytes a server log says it sent (nginx: field 2, fault server: field 4).
served_bytes() { awk -v f="$2" '{ s += $f } END { print s + 0 }' "$1"; }
