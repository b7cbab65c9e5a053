/* Defaults of the HTTP layer's configuration (http_config.h). */
#include "http_config.h"

void
http_config_defaults(HttpConfig *c)
{
    *c = (HttpConfig){
        .tcp_address = HTTP_DEFAULT_TCP_ADDRESS,
        .tcp_port = HTTP_DEFAULT_TCP_PORT,
        .unix_path = NULL,
        .unix_mode = HTTP_DEFAULT_UNIX_MODE,
        .max_body_bytes = HTTP_DEFAULT_MAX_BODY_BYTES,
        .max_header_bytes = HTTP_DEFAULT_MAX_HEADER_BYTES,
        .idle_timeout_s = HTTP_DEFAULT_IDLE_TIMEOUT_S,
        .request_timeout_s = HTTP_DEFAULT_REQUEST_TIMEOUT_S,
        .max_connections = HTTP_DEFAULT_MAX_CONNECTIONS,
        .max_per_ip = HTTP_DEFAULT_MAX_PER_IP,
        .head_timeout_s = HTTP_DEFAULT_HEAD_TIMEOUT_S,
        .max_pending = HTTP_DEFAULT_MAX_PENDING,
        .body_budget_bytes = HTTP_DEFAULT_BODY_BUDGET_BYTES,
        .body_min_bytes_per_s = HTTP_DEFAULT_BODY_MIN_BYTES_PER_S,
        .body_rate_window_s = HTTP_DEFAULT_BODY_RATE_WINDOW_S,
        .spool_min_bytes = HTTP_DEFAULT_SPOOL_MIN_BYTES,
    };
}
