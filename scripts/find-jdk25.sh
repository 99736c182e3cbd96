# Sourced by the project's scripts: selects a JDK 25+ into JAVA_HOME and PATH (the machine's default java may be 17).
_pi4j_version() { "$1/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/ *java.specification.version = //p'; }
if [ -z "${JAVA_HOME:-}" ] || [ ! -x "$JAVA_HOME/bin/java" ] || [ "$(_pi4j_version "$JAVA_HOME")" -lt 25 ] 2>/dev/null; then
  JAVA_HOME=""
  for c in /usr/lib/jvm/temurin-25* /usr/lib/jvm/*25* /usr/lib/jvm/temurin-2[6-9]* /opt/java/*; do
    if [ -x "$c/bin/java" ] && [ "$(_pi4j_version "$c")" -ge 25 ] 2>/dev/null; then JAVA_HOME="$c"; break; fi
  done
  if [ -z "$JAVA_HOME" ]; then echo "error: JDK 25 not found; set JAVA_HOME to a JDK 25 or newer" >&2; exit 1; fi
fi
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
