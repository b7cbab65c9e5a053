# hostd/oci (issue 29): the Dockerfile parser and variable expansion, as a table; the tar
# reader's owner and link fields (hostd/extract/tar.c) that layer application relies on.
stockade_test(NAME unit_oci LABEL unit SOURCES test_oci.c
              LIBS stockade_oci stockade_base PkgConfig::CMOCKA)
