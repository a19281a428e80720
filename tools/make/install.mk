# install.mk — make install PREFIX=DIR: the plug-in header (include/specula.h), every header of the library
# (include/specula/, unique names), the archives (lib/libspecula-*.a) and lib/pkgconfig/specula.pc, so a plug-in
# or a program builds against the installed copy (examples/bigram does, in make test).
PREFIX ?= /usr/local
INSTALL_HEADERS := $(sort $(wildcard reference/*/*.h verify/*.h optimized/*.h optimized/cpu/*.h tools/analysis/*.h))
SPECULA_VERSION := 0.9

install: $(LIB)
	@mkdir -p $(PREFIX)/include/specula $(PREFIX)/lib/pkgconfig
	cp reference/methods/specula.h $(PREFIX)/include/specula.h
	cp $(INSTALL_HEADERS) $(PREFIX)/include/specula/
	cp $(LIB) $(PREFIX)/lib/
	printf '%s\n' 'prefix=$(abspath $(PREFIX))' 'includedir=$${prefix}/include' 'libdir=$${prefix}/lib' '' \
	    'Name: specula' 'Description: speculative decoding: reference, engine and verification of qwen3_5 decoding methods' \
	    'Version: $(SPECULA_VERSION)' 'Cflags: -I$${includedir} -I$${includedir}/specula' \
	    'Libs: -L$${libdir} $(foreach p,$(LIB_PARTS),-lspecula-$(p)) $(PKG_LIBS) -lm $(OPENMP)' \
	    > $(PREFIX)/lib/pkgconfig/specula.pc
	@echo "installed specula in $(PREFIX): include/specula.h, include/specula/, lib/libspecula-*.a, lib/pkgconfig/specula.pc"
