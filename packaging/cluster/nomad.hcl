# A Nomad batch job running one agent session under sessiond exec.
job "agent-session" {
  type = "batch"

  group "agent" {
    # One attempt: a failed session is resumed by the next run, from its handoff.
    restart {
      attempts = 0
      mode     = "fail"
    }

    task "agent" {
      driver = "docker"

      # SIGTERM stops the session gracefully; kill_timeout must exceed its
      # stop_grace (30s by default) plus the time to write the handoff.
      kill_signal  = "SIGTERM"
      kill_timeout = "90s"

      config {
        image   = "registry.example.com/agent-session:1.0"
        args    = ["claude", "-p", "Read .sessiond/context.md and continue with the next task."]
        volumes = ["/srv/agent-work:/work"]
      }

      # Nomad has no deadline of its own for batch jobs: this one is
      # sessiond's (seconds from the start), with the warning before it.
      env {
        SESSION_DEADLINE_SECONDS = "14400"
        SESSIOND_SOCKET          = "/tmp/sessiond.sock"
      }

      template {
        data        = "ANTHROPIC_API_KEY={{ with nomadVar \"nomad/jobs/agent-session\" }}{{ .anthropic_api_key }}{{ end }}"
        destination = "secrets/agent.env"
        env         = true
      }

      resources {
        cpu    = 2000
        memory = 4096
      }
    }
  }
}
