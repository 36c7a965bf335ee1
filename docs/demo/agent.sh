#!/usr/bin/env bash
# A scripted stand-in for a coding agent: it reads the context sessiond
# hands it, works on the next failing feature of feature_list.json, and
# tells sessiond what it did with `sessionctl report`.
#   agent.sh finish   mark the next feature passing, report, exit 0
#   agent.sh slow     start the next feature, report progress, and keep
#                     working until the deadline; report when warned
#   agent.sh hang     start the next feature and hang (to be killed)
set -u
mode=${1:-finish}
cd "$SESSIOND_PROJECT_DIR"

echo "agent: session $SESSIOND_SESSION_ID, deadline $SESSIOND_DEADLINE"
echo "agent: context handed over ($SESSIOND_CONTEXT_FILE):"
sed -n '1,12p' "$SESSIOND_CONTEXT_FILE" | sed 's/^/  | /'

# The next feature not passing yet (one feature per line in the file).
next=$(grep -m1 '"passes": false' feature_list.json)
id=$(echo "$next" | sed -E 's/.*"id": ([0-9]+).*/\1/')
desc=$(echo "$next" | sed -E 's/.*"description": "([^"]*)".*/\1/')
echo "agent: working on task #$id: $desc"
echo "// task $id: $desc" >> "src/task$id.js"

case $mode in
finish)
  sed -i -E "s/(\"id\": $id,.*\"passes\": )false/\1true/" feature_list.json
  git add -A >/dev/null && git commit -qm "Task #$id: $desc"
  sessionctl report --summary "Completed Task #$id ($desc)" --task "$desc" --status completed \
    --next "Start the next failing feature in feature_list.json" --plan "Work through feature_list.json in priority order"
  echo "agent: task #$id done"
  ;;
slow)
  sessionctl report --task "$desc" --step 1/3 --status in_progress --last-action "wrote the skeleton of src/task$id.js"
  while :; do
    if [ -f .sessiond/warning.json ]; then
      echo "agent: warned: $(sessionctl remaining)"
      echo "// step 2 of 3" >> "src/task$id.js"
      sessionctl report --summary "Task #$id ($desc) half done when time ran out" --step 2/3 \
        --next "Finish step 3 of task #$id: $desc" --next "Run the tests for task #$id"
      sleep 100
    fi
    sleep 0.2
  done
  ;;
hang)
  sessionctl report --task "$desc" --step 1/4 --status in_progress
  echo "agent: waiting on a network call that never returns..."
  sleep 1000
  ;;
esac
