#!/bin/sh
# Copies GraphiQL's release files (and the React it runs on) from the npm registry into
# app/api/graphiql/static/, byte for byte, with each package's LICENSE, and prints their
# SHA-256 sums for app/api/graphiql/README.md. Change a version here, run it from the
# repository's root, update the README's table and the paths in app/api/graphiql/page.html.
#
#     sh tools/vendor_graphiql.sh
set -eu

# package@version, then the files of it the page loads (its paths inside the package)
PACKAGES="
react@18.2.0 umd/react.production.min.js
react-dom@18.2.0 umd/react-dom.production.min.js
graphiql@3.8.3 graphiql.min.js graphiql.min.css
"

root=$(pwd)
target="$root/app/api/graphiql/static"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "$PACKAGES" | while read -r package files; do
    [ -n "$package" ] || continue
    name=${package%@*}
    version=${package##*@}
    (cd "$work" && npm pack --silent "$package" >/dev/null)
    mkdir -p "$work/$package"
    tar -xzf "$work/$name-$version.tgz" -C "$work/$package"
    rm -rf "${target:?}/$package"
    mkdir -p "$target/$package"
    cp "$work/$package/package/LICENSE" "$target/$package/LICENSE"
    for file in $files; do
        cp "$work/$package/package/$file" "$target/$package/$(basename "$file")"
    done
done
cd "$target" && find . -type f -path './*@*' | sort | xargs sha256sum
