stockade_test(NAME unit_channel LABEL unit SOURCES test_channel.c
              LIBS stockade_channel PkgConfig::CMOCKA)
