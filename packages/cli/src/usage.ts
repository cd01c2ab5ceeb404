/** The text of `cairn --help`. */
export const usage = `Usage: cairn runs <command> [options]
       cairn ui [--host 127.0.0.1] [--port 0]

Lists, inspects, watches and steers Cairn runs in a store.

Commands:
  runs list [--status s1,s2] [--name n] [--kind k] [--waiting] [--limit n]
                                      runs, oldest first (--waiting: only runs that wait, with what for)
  runs show <runId>                   status, holder and whether it is alive, lease, epoch, recoveries,
                                      error, input, output, what it waits for, parent and children
  runs timeline <runId>               its attempts (owner, epoch, how each ended), trips or nodes with
                                      durations and usage, each effect's outcome; a planner's plan as a
                                      DAG with each node's state; child runs indented under their node
  runs watch <runId> [--after seq]    its events as they are written, one line each, until it ends
  runs cancel <runId>                 cancels it: at once when no live worker holds it, else its holder
                                      cancels it at its next heartbeat
  runs discard <runId>                deletes it with its child runs (refused while a live worker holds it)
  runs resume <runId>                 continues a run that has not ended and that no live worker holds:
                                      with --module exporting its definition, performs it here to its end
                                      or next wait (Ctrl-C hands it over); without, says that any worker
                                      with it will claim it
  runs signal <runId> <name> [--payload json] [--key idempotencyKey]
                                      puts a signal in its mailbox
  runs approve <runId> <toolCallId> [--args-hash h] [--by who]
                                      approves a held tool call (default: the arguments it waits with),
                                      recorded as decided by --by (default: your user name)
  runs reject <runId> <toolCallId> [--reason text] [--by who]
                                      rejects a held tool call; the model reads the reason
  runs reencrypt [--status s1,s2] [--name n] [--kind k] [--concurrency n]
                                      moves every stored payload to the key --codec writes with now (after
                                      a key rotation), while runs go on; prints progress on stderr
  runs forget --subject <subject> | --run <runId> [--timeout ms]
                                      deletes the subject's keys (--codec with per-subject keys), then its
                                      runs, stopping the live ones; exit 1 when some were still held
  ui                                  serves the runs' web page (list, timelines, live watch) on this
                                      machine until Ctrl-C; prints its address (default: a free port)

The store (a flag wins over its environment variable):
  --module <path>    CAIRN_MODULE   an ES module exporting \`store\`, as cairn-worker takes it (and its
                                    agents, planners, definitions: what \`runs resume\` can perform here)
                     DATABASE_URL   else Postgres (postgres://...; needs @cairn/store-pg and postgres)
  --schema <name>    CAIRN_SCHEMA   its schema (default cairn)
                     REDIS_URL      else Redis (needs @cairn/store-redis and ioredis)
  --prefix <prefix>  CAIRN_PREFIX   its key prefix (default cairn)
  --codec <module>   CAIRN_CODEC    an ES module exporting \`codec\` (a PayloadCodec or an array of them) and
                                    optionally \`decodeWith\`: the codec the runs' workers encode payloads
                                    with (protectPayloads); they are read decoded. Without it, encrypted
                                    payloads show as "(encrypted)", and commands that would write into such
                                    a run (signal, approve, reject, cancel, resume) refuse, exit 2
                     CAIRN_CONNECT_TIMEOUT_MS
                                    how long Postgres or Redis may take to answer first (default 10000);
                                    past it the command fails with STORE_UNAVAILABLE, exit 1

Options:
  --json             stable JSON for scripts on stdout (watch: one JSON event a line, with its seq);
                     errors as {"error":{"code","message","data"}} on stderr
  -h, --help         print this help
  -v, --version      print the version
Colour only when stdout is a terminal and NO_COLOR is unset. Times are UTC.

Exit codes:
  0    done (resume: the run was performed, or is claimable; its outcome is printed)
  1    the store failed, or something unexpected did
  2    usage: the command line cannot be used, no store is named, a --codec module exports no codec,
       or a command would write into a run whose payloads are encrypted without --codec
  3    no run with that id
  4    refused: held by a live worker (LEASE_HELD), already ended (RUN_ENDED), a child run or an argument
       the store does not take (INVALID_ARGUMENT), a wait not due (RUN_WAITING), drift
  130  stopped by Ctrl-C: a watch ends; a resume hands its run over (claimable at once); ui stops
Errors print one line on stderr: error CODE: message`;
