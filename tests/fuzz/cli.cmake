# The CLI's reading of the daemon's answers (issue 31): an event stream followed in odd-sized
# pieces, JSON and error answers, X-Stockade-Workspace (tools/events.c, tools/client.c).
# Seeds: corpus/fuzz_cli_answer/seed_*.
stockade_fuzz_target(fuzz_cli_answer SOURCES fuzz_cli_answer.c LIBS stockade_cli)
