# make install puts kidscope where a Unix tool goes: the binary in
# $(PREFIX)/bin, its man pages (docs/man, kept current by a test) in
# $(PREFIX)/share/man/man1, and its bash, zsh and fish completions where
# those shells look for them. DESTDIR stages the whole tree for a package.

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR  ?= $(DATADIR)/man
GO      ?= go
# The binary make builds, and installs.
KIDSCOPE ?= kidscope
# A release stamps its version: make VERSION=v1.5.0 install.
VERSION ?=
LDFLAGS := $(if $(VERSION),-X main.version=$(VERSION))

.PHONY: all build install install-built uninstall man test clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(KIDSCOPE) ./cmd/kidscope

install: build
	$(MAKE) install-built

# install-built installs $(KIDSCOPE) as it is: the completions come from
# it (kidscope completion SHELL), the man pages from docs/man.
install-built:
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(DATADIR)/bash-completion/completions \
		$(DESTDIR)$(DATADIR)/zsh/site-functions \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d
	install -m 0755 $(KIDSCOPE) $(DESTDIR)$(BINDIR)/kidscope
	install -m 0644 docs/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	$(KIDSCOPE) completion bash > $(DESTDIR)$(DATADIR)/bash-completion/completions/kidscope
	$(KIDSCOPE) completion zsh > $(DESTDIR)$(DATADIR)/zsh/site-functions/_kidscope
	$(KIDSCOPE) completion fish > $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/kidscope.fish

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/kidscope $(DESTDIR)$(MANDIR)/man1/kidscope.1 $(DESTDIR)$(MANDIR)/man1/kidscope-*.1 \
		$(DESTDIR)$(DATADIR)/bash-completion/completions/kidscope \
		$(DESTDIR)$(DATADIR)/zsh/site-functions/_kidscope \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d/kidscope.fish

# docs/man again from the command tree (what the test compares them with).
man:
	$(GO) test ./cmd/kidscope -run TestManPages -update

test:
	bash scripts/test.sh

clean:
	rm -f $(KIDSCOPE)
