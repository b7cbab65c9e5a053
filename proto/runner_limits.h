/* runner_limits.h (not limits.h: that would shadow the C library header). Every bound on what crosses the host <-> guest channel. runner.proto names these beside
 * each field; proto/message.c enforces them on both ends right after decoding. Changing one
 * is a protocol change: bump PROTOCOL_VERSION. */
#pragma once

#define PROTOCOL_VERSION 5 /* 2: Prepare; 3: egress tunnel; 4: Finalize; 5: pty */

#define FRAME_HDR_BYTES 4
#define FRAME_MAX_BYTES (512u * 1024u)   /* one encoded message */
#define FRAME_SYNC_BYTES 16              /* 00000000 "STKS" + u64 nonce */

#define HELLO_ENTROPY_BYTES 64
#define SESSION_ID_MAX_BYTES 64
#define HOSTNAME_MAX_BYTES 63
#define EXEC_MIN_UID 1
#define MIRROR_BUDGET_MAX_BYTES (1024ull * 1024 * 1024)

#define ENV_MAX_COUNT 256
#define ENV_NAME_MAX_BYTES 256
#define ENV_VALUE_MAX_BYTES (32u * 1024u)
#define ARGV_MAX_COUNT 1024
#define ARG_MAX_BYTES (128u * 1024u)
#define EXEC_TOTAL_MAX_BYTES (256u * 1024u)
#define EXEC_MAX_CONCURRENT 64
#define EXEC_ID_WARMUP 0xffffffffu /* the Prepare warm-up exec */
#define EXEC_ID_PARKED 0xfffffffeu /* the Prestart process until adopted; sessions use 1..this-1 */
#define WARMUP_UID 65534
#define WARMUP_ARGV_MAX_COUNT 8
#define WARMUP_ARG_MAX_BYTES 256

#define STDIN_CHUNK_MAX_BYTES (64u * 1024u)
#define PTY_COLS_MAX 1000 /* Exec.pty, Resize: a terminal's size, 1..these */
#define PTY_ROWS_MAX 1000
#define OUTPUT_CHUNK_MAX_BYTES (64u * 1024u)
#define FILE_CHUNK_MAX_BYTES (256u * 1024u)

#define PATH_MAX_BYTES 4096
#define NAME_MAX_BYTES 255
#define PATH_MAX_DEPTH 64
#define LIST_MAX_ENTRIES 4096

/* Egress tunnel (runner.proto "Tunnel"; arithmetic in flow.h). The window bounds what one
 * stream can make the receiver buffer; streams x window bounds a session. */
#define TUNNEL_STREAMS_MAX 128
#define TUNNEL_WINDOW_BYTES (128u * 1024u)
#define TUNNEL_DATA_MAX_BYTES (64u * 1024u)
#define TUNNEL_HOST_MAX_BYTES 255
#define TUNNEL_PORT_MAX 65535

/* Finalize (runner.proto "Finalize"): the manifest of a clean end. Bounds what a lying runner
 * can make the host hold: entries x their path bytes. The host asks for its own salvage caps
 * (ExtractLimits: entries, path bytes, depth) within these. */
#define FINALIZE_MAX_ENTRIES 100000
#define FINALIZE_MAX_PATH_BYTES_TOTAL (16u * 1024u * 1024u)
#define MANIFEST_FRAME_MAX_ENTRIES 256
#define MANIFEST_FRAME_MAX_PATH_BYTES (256u * 1024u) /* keeps a frame under FRAME_MAX_BYTES */

#define VERSION_MAX_BYTES 64
#define ERROR_MESSAGE_MAX_BYTES 256

/* Decoding may allocate at most this much per message (protobuf-c's unpacked form is larger
 * than the wire form: pointers per repeated element, NUL per string). */
#define DECODE_ARENA_MAX_BYTES (8u * FRAME_MAX_BYTES)
