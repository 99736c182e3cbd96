#!/usr/bin/env bash
# Spark transformer throughput (local[2]) against the same prompts through generate in a loop, in one run.
# The cli jar is run as the command, not put on the classpath (it bundles its own SLF4J provider).
# usage: bench/spark-bench.sh MODEL [PROMPTS=32] [MAX_TOKENS=32] [STREAMS=4] [THREADS=2] [CLI_PROMPTS=4] [DECODE_BATCHING=exact]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/find-jdk25.sh"
cd "$here"
[ $# -ge 1 ] || { echo "usage: $0 MODEL [PROMPTS] [MAX_TOKENS] [STREAMS] [THREADS] [CLI_PROMPTS] [DECODE_BATCHING]" >&2; exit 2; }
mvn -B -q -ntp -pl cli,spark -am package -DskipTests -Dcuda.emulator.skip=true >/dev/null
mvn -B -q -ntp -pl spark test-compile dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/test-cp.txt >/dev/null
flags=$(sed -n 's:.*<spark.jvm.flags>\(.*\)</spark.jvm.flags>.*:\1:p' spark/pom.xml)   # what spark-submit would add
exec "$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC $flags -Xmx4g \
  -Dpowerinfer4j.cli.jar="$here/cli/target/powerinfer4j.jar" \
  -cp "spark/target/test-classes:spark/target/classes:$(tr ':' '\n' < spark/target/test-cp.txt | grep -v '/cli/' | paste -sd:)" \
  org.powerinfer4j.spark.SparkThroughputBenchmark "$@" 2> >(grep -v "^WARNING: Using incubator" >&2)
