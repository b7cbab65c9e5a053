#!/bin/sh
# testca.sh DIR NAME [CA]: a throw-away certificate authority and a server certificate it
# signed, made with openssl (.ci/packages) when a test starts; nothing is kept.
#   DIR/CA.pem, DIR/CA.key      the CA ("ca" unless named), made once per DIR and name
#   DIR/NAME.pem, DIR/NAME.key  a server certificate for IP 127.0.0.1 and DNS localhost
# EC P-256, valid for 2 days; keys are mode 0600.
set -eu
dir=$1 name=$2 ca=${3:-ca}
cd "$dir"
umask 077
if [ ! -f "$ca.pem" ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=stockade test $ca" -keyout "$ca.key" -out "$ca.pem" 2>/dev/null
fi
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
    -keyout "$name.key" -out "$name.csr" 2>/dev/null
printf '%s\n' 'subjectAltName=IP:127.0.0.1,DNS:localhost' 'basicConstraints=CA:FALSE' \
    'extendedKeyUsage=serverAuth' > "$name.ext"
openssl x509 -req -in "$name.csr" -CA "$ca.pem" -CAkey "$ca.key" -CAcreateserial -days 2 \
    -extfile "$name.ext" -out "$name.pem" 2>/dev/null
rm -f "$name.csr" "$name.ext"
chmod 644 "$ca.pem" "$name.pem"
