/* Streaming responses (internal to the HTTP layer): an HttpProducer behind an MHD content
 * reader. See http.h for the producer's contract. */
#pragma once

#include "http_internal.h"

/* A chunked MHD response that calls producer on the connection thread. On failure returns
 * NULL and has already called free_userdata(userdata). */
struct MHD_Response *http_stream_response(HttpServer *s, struct MHD_Connection *mc,
                                          HttpProducer producer, void *userdata,
                                          void (*free_userdata)(void *));
