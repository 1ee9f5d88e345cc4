# Writes the hostile database files of the reliability review (shared/docs/review-reliability.md,
# appendix A.3) and more into the folder given as argv[1]. Python's own sqlite3 and bz2 build the
# SQLite and bzip2 files, so they are not made by the code under test.
import bz2, hashlib, os, sqlite3, sys

d = sys.argv[1]
def w(name, data):
    with open(os.path.join(d, name), "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)

KEY = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"
ITEM = "ConvDirectNaiveFwd:1.5,0,miopenConvolutionFwdAlgoDirect"
PKEY = "2x64x56x56x1x3x3x1x64x32x1x1x0x1x1x0x1x1x0x0x1xNCHWxFP32xF"

# Text find-db and perf-db.
w("empty.fdb.txt", "")
w("empty.db.txt", "")
w("good.fdb.txt", f"{KEY}={ITEM}\n")
w("good.db.txt", f"{PKEY}=ConvBinWinogradRxSf3x2:78\n")
w("crlf.fdb.txt", f"{KEY}={ITEM}\r\n")
w("cr-only.fdb.txt", f"{KEY}={ITEM}\r{KEY}={ITEM}\r")
w("garbage.fdb.txt", os.urandom(65536))
w("garbage.db.txt", os.urandom(65536))
w("bom.fdb.txt", "\ufeff" + f"{KEY}={ITEM}\n")
w("latin1.fdb.txt", f"{KEY}={ITEM}".encode() + b"\xe9\n")
w("nul.fdb.txt", f"{KEY}={ITEM}\x00\n")
w("nul-params.db.txt", f"{PKEY}=S:1\x002\n")
w("dup-key.fdb.txt", f"{KEY}={ITEM}\n{KEY}={ITEM}\n")
w("dup-key.db.txt", f"{PKEY}=S:1\n{PKEY}=S:2\n")
w("dup-solver.fdb.txt", f"{KEY}={ITEM};{ITEM}\n")
w("dup-solver.db.txt", f"{PKEY}=S:1;S:2\n")
w("nan.fdb.txt", f"{KEY}=S:nan,0,miopenConvolutionFwdAlgoDirect\n")
w("inf.fdb.txt", f"{KEY}=S:1e400,0,miopenConvolutionFwdAlgoDirect\n")
w("neg-ws.fdb.txt", f"{KEY}=S:1,-4,miopenConvolutionFwdAlgoDirect\n")
w("bad-algo.fdb.txt", f"{KEY}=S:1,0,miopenConvolutionFwdAlgoMagic\n")
w("256-items.fdb.txt", KEY + "=" + ";".join(f"S{i}:1,0,miopenConvolutionFwdAlgoDirect" for i in range(256)) + "\n")
w("256-items.db.txt", PKEY + "=" + ";".join(f"S{i}:1" for i in range(256)) + "\n")
w("million-items.fdb.txt", KEY + "=" + ";".join(f"S{i}:1,0,miopenConvolutionFwdAlgoDirect" for i in range(1000000)) + "\n")
w("huge-item.fdb.txt", KEY + "=" + "A" * (20 << 20) + "\n")
w("huge-key.fdb.txt", "1" * (5 << 20) + "=" + ITEM + "\n")
w("no-equals.fdb.txt", KEY + ITEM + "\n")
w("no-items.fdb.txt", KEY + "=\n")
w("no-colon.db.txt", PKEY + "=S1\n")
w("space-key.db.txt", PKEY.replace("x56x", "x5 6x") + "=S:1\n")
w("lfs.fdb.txt", "version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 123\n")
w("legacy-bad.fdb.txt", f"{KEY}=miopenConvolutionFwdAlgoDirect:S,1,0\n")

# SQLite perf-dbs.
COLS = "layout,data_type,direction,spatial_dim,in_channels,in_h,in_w,in_d,fil_h,fil_w,fil_d,out_channels,batchsize,pad_h,pad_w,pad_d,conv_stride_h,conv_stride_w,conv_stride_d,dilation_h,dilation_w,dilation_d,bias,group_count"
def perfdb(name, config_cols=COLS, perf="CREATE TABLE perf_db (id INTEGER PRIMARY KEY ASC, solver TEXT NOT NULL, config INTEGER NOT NULL, params TEXT NOT NULL);", rows=True, extra=""):
    p = os.path.join(d, name)
    c = sqlite3.connect(p)
    cols = config_cols.split(",")
    c.executescript("CREATE TABLE config (id INTEGER PRIMARY KEY ASC," + ",".join(f"{x}" for x in cols) + ");" + perf + extra)
    if rows:
        vals = ["NCHW", "FP32", "F", 2, 64, 56, 56, 1, 3, 3, 1, 64, 32, 1, 1, 0, 1, 1, 0, 1, 1, 0, 0, 1][: len(cols)]
        c.execute(f"INSERT INTO config(id,{config_cols}) VALUES(1,{','.join('?' * len(cols))})", vals)
        if "CREATE TABLE perf_db" in perf:
            c.execute("INSERT INTO perf_db(solver,config,params) VALUES('S',1,'78')")
    c.commit(); c.close()
    return p
perfdb("good.db")
perfdb("missing-col.db", COLS.replace(",spatial_dim", ""))
perfdb("no-perf-table.db", perf="")
perfdb("view-bomb.db", perf="CREATE VIEW perf_db AS WITH RECURSIVE cnt(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM cnt LIMIT 100000000000) SELECT x AS id, 'S' AS solver, 1 AS config, 'p' AS params FROM cnt;")
p = perfdb("null-params.db", perf="CREATE TABLE perf_db (id INTEGER PRIMARY KEY ASC, solver TEXT, config INTEGER, params TEXT);", rows=False)
c = sqlite3.connect(p)
c.execute(f"INSERT INTO config(id,{COLS}) VALUES(1,'NCHW','FP32','F',2,64,56,56,1,3,3,1,64,32,1,1,0,1,1,0,1,1,0,0,1)")
c.execute("INSERT INTO perf_db(solver,config,params) VALUES('S',1,NULL)"); c.commit(); c.close()
p = perfdb("text-in-int.db", rows=False)
c = sqlite3.connect(p)
c.execute(f"INSERT INTO config(id,{COLS}) VALUES(1,'NCHW','FP32','F','two',64,56,56,1,3,3,1,64,32,1,1,0,1,1,0,1,1,0,0,1)")
c.execute("INSERT INTO perf_db(solver,config,params) VALUES('S',1,'1')"); c.commit(); c.close()
p = perfdb("blob-solver.db", rows=False)
c = sqlite3.connect(p)
c.execute(f"INSERT INTO config(id,{COLS}) VALUES(1,'NCHW','FP32','F',2,64,56,56,1,3,3,1,64,32,1,1,0,1,1,0,1,1,0,0,1)")
c.execute("INSERT INTO perf_db(solver,config,params) VALUES(?,1,'1')", (b"\x00\x01",)); c.commit(); c.close()
good = open(os.path.join(d, "good.db"), "rb").read()
w("truncated-100.db", good[:100])
w("truncated-half.db", good[: len(good) // 2])
# The b-tree header of page 1 (right after the 100-byte file header) overwritten.
corrupt = bytearray(good); corrupt[100:164] = b"\xff" * 64; w("corrupt-page.db", bytes(corrupt))
w("empty.db", b"")
w("text.db", f"{PKEY}=S:1\n")

# kdbs.
KDB = "CREATE TABLE kern_db (id INTEGER PRIMARY KEY ASC, kernel_name TEXT NOT NULL, kernel_args TEXT NOT NULL, kernel_blob BLOB NOT NULL, kernel_hash TEXT NOT NULL, uncompressed_size INT NOT NULL);"
def kdb(name, rows):
    p = os.path.join(d, name)
    c = sqlite3.connect(p); c.executescript(KDB)
    c.executemany("INSERT INTO kern_db(kernel_name,kernel_args,kernel_blob,kernel_hash,uncompressed_size) VALUES(?,?,?,?,?)", rows)
    c.commit(); c.close()
obj = os.urandom(4096) + b"\0" * 4096
md5 = hashlib.md5(obj).hexdigest()
kdb("good.kdb", [("a.cpp.o", " -mcpu=gfx942", bz2.compress(obj), md5, len(obj))])
kdb("size-2p40.kdb", [("a.cpp.o", " -mcpu=gfx942", bz2.compress(obj), md5, 2**40)])
kdb("size-2p62.kdb", [("a.cpp.o", " -mcpu=gfx942", bz2.compress(obj), md5, 2**62)])
kdb("size-i64max.kdb", [("a.cpp.o", " -mcpu=gfx942", bz2.compress(obj), md5, 2**63 - 1)])
kdb("size-negative.kdb", [("a.cpp.o", " -mcpu=gfx942", bz2.compress(obj), md5, -5)])
kdb("size-lie.kdb", [("a.cpp.o", " -mcpu=gfx942", bz2.compress(obj), md5, 100)])
kdb("not-bzip2.kdb", [("a.cpp.o", " -mcpu=gfx942", os.urandom(512), md5, 8192)])
kdb("md5-mismatch.kdb", [("a.cpp.o", " -mcpu=gfx942", bz2.compress(obj), "0" * 32, len(obj))])
kdb("dup-key.kdb", [("a.cpp.o", " -mcpu=gfx942", bz2.compress(obj), md5, len(obj))] * 2)
kdb("text-blob.kdb", [("a.cpp.o", " -mcpu=gfx942", "text", md5, 0)])
z = bz2.BZ2Compressor(9); chunk = b"\0" * (64 << 20)
parts = [z.compress(chunk) for _ in range(16)] + [z.flush()]
h = hashlib.md5()
for _ in range(16): h.update(chunk)
bomb = b"".join(parts)
kdb("bomb-1g-honest.kdb", [("a.cpp.o", " -mcpu=gfx942", bomb, h.hexdigest(), 1 << 30)])
kdb("bomb-8x.kdb", [(f"a{i}.cpp.o", " -mcpu=gfx942", bomb, h.hexdigest(), 1 << 30) for i in range(8)])
w("empty.kdb", b"")
w("garbage.kdb", os.urandom(65536))
w("lfs.kdb", b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 123\n" + b" " * 600)
p = os.path.join(d, "no-table.kdb"); c = sqlite3.connect(p); c.executescript("CREATE TABLE other (x);" * 1 + "INSERT INTO other VALUES(zeroblob(1000));"); c.commit(); c.close()

# Special files.
os.symlink("/dev/zero", os.path.join(d, "zero.fdb.txt"))
os.symlink("/dev/urandom", os.path.join(d, "urandom.db.txt"))
os.symlink("/dev/zero", os.path.join(d, "zero.kdb"))
os.mkfifo(os.path.join(d, "fifo.fdb.txt"))
os.mkdir(os.path.join(d, "dir.fdb.txt"))

# SQLite compares names without regard to letter case: a view named in another case is still
# refused, a table named in another case still read.
ENDLESS = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n)"
for i, name in enumerate(["Perf_Db", "PERF_DB", "perf_DB"]):
    perfdb(f"view-case-{i}.db", perf=f"CREATE VIEW {name} AS {ENDLESS} SELECT x AS id, 'S' || x AS solver, 1 AS config, 'p' AS params FROM n;")
for i, name in enumerate(["CONFIG", "Config"]):
    p = os.path.join(d, f"view-config-{i}.db")
    c = sqlite3.connect(p)
    c.executescript(f"CREATE VIEW {name} AS {ENDLESS} SELECT x AS id," + ",".join(f"1 AS {x}" for x in COLS.split(",")) + " FROM n;"
                    "CREATE TABLE perf_db (id INTEGER PRIMARY KEY ASC, solver TEXT NOT NULL, config INTEGER NOT NULL, params TEXT NOT NULL);"
                    "INSERT INTO perf_db(solver,config,params) VALUES('S',1,'p');")
    c.commit(); c.close()
for i, name in enumerate(["Kern_Db", "KERN_DB"]):
    p = os.path.join(d, f"view-kdb-{i}.kdb")
    c = sqlite3.connect(p)
    c.executescript(f"CREATE VIEW {name} AS {ENDLESS} SELECT x id,'k'||x kernel_name,'' kernel_args,x'00' kernel_blob,'93b885adfe0da089cdf634904fd59f71' kernel_hash,0 uncompressed_size FROM n;CREATE TABLE pad(x);INSERT INTO pad VALUES(zeroblob(4096));")
    c.commit(); c.close()
# Tables in other letter cases: valid files.
perfdb("upper-case-tables.db", perf="CREATE TABLE PERF_DB (id INTEGER PRIMARY KEY ASC, solver TEXT NOT NULL, config INTEGER NOT NULL, params TEXT NOT NULL);")

# config.id repeated: a join would multiply (3,000 x 3,000 rows from 188 KB, 8,000 x 8,000
# from 520 KB).
def join_bomb(name, n):
    p = os.path.join(d, name)
    c = sqlite3.connect(p)
    c.executescript("CREATE TABLE config (id INTEGER," + COLS + ");"
                    "CREATE TABLE perf_db (id INTEGER PRIMARY KEY ASC, solver TEXT NOT NULL, config INTEGER NOT NULL, params TEXT NOT NULL);")
    vals = ["NCHW", "FP32", "F", 2, 64, 56, 56, 1, 3, 3, 1, 64, 32, 1, 1, 0, 1, 1, 0, 1, 1, 0, 0, 1]
    c.executemany(f"INSERT INTO config(id,{COLS}) VALUES(1,{','.join('?' * 24)})", [vals] * n)
    c.executemany("INSERT INTO perf_db(solver,config,params) VALUES(?,1,'p')", [(f"S{i}",) for i in range(n)])
    c.commit(); c.close()
join_bomb("join-3000.db", 3000)
join_bomb("join-8000.db", 8000)
join_bomb("dup-config-id.db", 2)
# 256 solvers for one config (one more than a record holds), and 255 (a full record).
for n, name in [(256, "256-items.db"), (255, "255-items.db")]:
    p = perfdb(name, rows=False)
    c = sqlite3.connect(p)
    c.execute(f"INSERT INTO config(id,{COLS}) VALUES(1,'NCHW','FP32','F',2,64,56,56,1,3,3,1,64,32,1,1,0,1,1,0,1,1,0,0,1)")
    c.executemany("INSERT INTO perf_db(solver,config,params) VALUES(?,1,'p')", [(f"S{i}",) for i in range(n)])
    c.commit(); c.close()
# A WAL-mode database (valid): read without creating -wal or -shm beside it.
p = perfdb("wal.db")
c = sqlite3.connect(p); c.execute("PRAGMA journal_mode=WAL"); c.execute("INSERT INTO perf_db(solver,config,params) VALUES('T',1,'9')"); c.commit(); c.close()

# Terminal control characters: in a bad line (quoted by the error), in a solver name of a valid
# file (printed by stats), and a right-to-left override.
w("esc-line.fdb.txt", f"{KEY}=\x1b]0;owned\x07S:1,0,miopenConvolutionFwdAlgoMagic\n")
w("esc-solver.fdb.txt", f"{KEY}=S\x1b[2J:1,0,miopenConvolutionFwdAlgoDirect\n")
w("bidi-solver.db.txt", f"{PKEY}=S\u202eX:1\n")
kdb("long-name.kdb", [("a" * (10 << 20), " -mcpu=gfx942", bz2.compress(obj), md5, len(obj))])
kdb("esc-name.kdb", [("a\x1b]0;x\x07.cpp.o", " -mcpu=gfx942", bz2.compress(obj), md5, len(obj))])
# 17 honest 64 MiB bombs: the claims sum past the per-kdb cap, refused before decoding.
z = bz2.BZ2Compressor(9); small_bomb = z.compress(chunk) + z.flush()
kdb("bomb-17x64m.kdb", [(f"b{i}.cpp.o", " -mcpu=gfx942", small_bomb, hashlib.md5(chunk).hexdigest(), 64 << 20) for i in range(17)])

# MIOpen's text files cut at each sixteenth: refused as truncated, unless a cut falls right
# after a newline (then a shorter valid file).
if len(sys.argv) > 2:
    for src in sys.argv[2:]:
        data = open(src, "rb").read()
        base = os.path.basename(src)
        for i in range(1, 16):
            w(f"cut{i:02}-{base}", data[: len(data) * i // 16])
