#!/bin/sh
# Make the deployment's secrets at install, on the machine that deploys: the repository
# holds no secret value, and each installation gets its own.
#
#     deploy/make-secrets.sh                  for compose: deploy/.env
#     deploy/make-secrets.sh k8s REDIS_URL    for Kubernetes: deploy/k8s/secrets/
#
# compose: deploy/.env gets SOLRACE_REDIS_PASSWORD, 32 random bytes in hex. compose.yaml
#   reads it (compose reads the .env next to the compose file) for Redis' requirepass
#   and the nodes' SOLRACE_REDIS_URL. An existing file is kept as it is; to change the
#   password, delete it, run this again, and recreate Redis and every node.
#
# k8s: REDIS_URL is your Redis without its password, such as
#   rediss://redis.internal:6380/0 (rediss:// for TLS, as managed Redis services offer;
#   redis+cluster:// or rediss+cluster:// for a cluster). The password is $REDIS_PASSWORD
#   when set (a managed Redis's own), else 32 new random bytes in hex, written to
#   deploy/k8s/secrets/redis-password for you to set on your Redis (requirepass). The
#   URL with the password goes to deploy/k8s/secrets/solrace-redis.env, which
#   deploy/k8s/kustomization.yaml turns into the Secret `solrace-redis`. Existing files
#   are replaced.
#
# The files are readable by their owner alone and ignored by git (deploy/.gitignore).
# SOLRACE_ENV_FILE and SOLRACE_K8S_SECRETS name other places to write them.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
umask 077

random_hex() {
    openssl rand -hex 32
}

# A password as it goes into a URL: as it is when it holds only unreserved characters,
# else every byte percent-encoded (redis-py decodes it).
url_password() {
    case $1 in
        *[!A-Za-z0-9._~-]*) printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n' | sed 's/../%&/g' ;;
        *) printf '%s' "$1" ;;
    esac
}

compose() {
    env_file=${SOLRACE_ENV_FILE:-$here/.env}
    if [ -e "$env_file" ]; then
        echo "make-secrets: $env_file exists; kept as it is (delete it for a new password)"
        return
    fi
    printf 'SOLRACE_REDIS_PASSWORD=%s\n' "$(random_hex)" > "$env_file"
    echo "make-secrets: wrote $env_file"
}

k8s() {
    url=$1
    case $url in
        redis://* | rediss://* | redis+cluster://* | rediss+cluster://*) ;;
        *)
            echo "make-secrets: $url is not a redis://, rediss:// or redis+cluster:// URL" >&2
            exit 2
            ;;
    esac
    scheme=${url%%://*}
    rest=${url#*://}
    case $rest in
        *@*)
            echo "make-secrets: give the URL without a password (set REDIS_PASSWORD)" >&2
            exit 2
            ;;
    esac
    dir=${SOLRACE_K8S_SECRETS:-$here/k8s/secrets}
    mkdir -p "$dir"
    password=${REDIS_PASSWORD:-}
    if [ -z "$password" ]; then
        password=$(random_hex)
        printf '%s\n' "$password" > "$dir/redis-password"
        echo "make-secrets: wrote $dir/redis-password: set it as your Redis' password"
    fi
    printf 'SOLRACE_REDIS_URL=%s://:%s@%s\n' "$scheme" "$(url_password "$password")" "$rest" \
        > "$dir/solrace-redis.env"
    echo "make-secrets: wrote $dir/solrace-redis.env"
}

case ${1:-compose} in
    compose) compose ;;
    k8s)
        if [ $# -ne 2 ]; then
            echo "usage: $0 k8s REDIS_URL" >&2
            exit 2
        fi
        k8s "$2"
        ;;
    *)
        echo "usage: $0 [compose | k8s REDIS_URL]" >&2
        exit 2
        ;;
esac
