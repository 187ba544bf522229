# LiteLLM's encrypt_value (nacl SecretBox, key = sha256(salt)) + urlsafe_b64encode,
# written from the XSalsa20-Poly1305 spec (no nacl available here).
import hashlib, base64, struct
def rotl(v,c): return ((v<<c)&0xffffffff)|(v>>(32-c))
def qr(x,a,b,c,d):
    x[b]^=rotl((x[a]+x[d])&0xffffffff,7); x[c]^=rotl((x[b]+x[a])&0xffffffff,9)
    x[d]^=rotl((x[c]+x[b])&0xffffffff,13); x[a]^=rotl((x[d]+x[c])&0xffffffff,18)
def rounds(x):
    for _ in range(10):
        qr(x,0,4,8,12); qr(x,5,9,13,1); qr(x,10,14,2,6); qr(x,15,3,7,11)
        qr(x,0,1,2,3); qr(x,5,6,7,4); qr(x,10,11,8,9); qr(x,15,12,13,14)
C=struct.unpack('<4I',b'expand 32-byte k')
def state(key,inp16):
    k=struct.unpack('<8I',key); n=struct.unpack('<4I',inp16)
    return [C[0],k[0],k[1],k[2],k[3],C[1],n[0],n[1],n[2],n[3],C[2],k[4],k[5],k[6],k[7],C[3]]
def hsalsa(key,n16):
    x=state(key,n16); rounds(x)
    return struct.pack('<8I',*[x[i] for i in (0,5,10,15,6,7,8,9)])
def salsa_block(key,n8,ctr):
    x0=state(key,n8+struct.pack('<Q',ctr)); x=list(x0); rounds(x)
    return struct.pack('<16I',*[(x[i]+x0[i])&0xffffffff for i in range(16)])
def xsalsa_stream(key,nonce,n):
    sub=hsalsa(key,nonce[:16]); out=b''; c=0
    while len(out)<n: out+=salsa_block(sub,nonce[16:],c); c+=1
    return out[:n]
def poly1305(key,msg):
    r=int.from_bytes(key[:16],'little')&0x0ffffffc0ffffffc0ffffffc0fffffff
    s=int.from_bytes(key[16:],'little'); p=(1<<130)-5; a=0
    for i in range(0,len(msg),16):
        blk=msg[i:i+16]+b'\x01'; a=(a+int.from_bytes(blk,'little'))*r%p
    return ((a+s)%(1<<128)).to_bytes(16,'little')
def secretbox(key,nonce,m):
    ks=xsalsa_stream(key,nonce,32+len(m)); c=bytes(a^b for a,b in zip(m,ks[32:]))
    return poly1305(ks[:32],c)+c
# NaCl's own secretbox test vector (tests/secretbox.c), to check this code:
firstkey=bytes([0x1b,0x27,0x55,0x64,0x73,0xe9,0x85,0xd4,0x62,0xcd,0x51,0x19,0x7a,0x9a,0x46,0xc7,0x60,0x09,0x54,0x9e,0xac,0x64,0x74,0xf2,0x06,0xc4,0xee,0x08,0x44,0xf6,0x83,0x89])
nonce=bytes([0x69,0x69,0x6e,0xe9,0x55,0xb6,0x2b,0x73,0xcd,0x62,0xbd,0xa8,0x75,0xfc,0x73,0xd6,0x82,0x19,0xe0,0x03,0x6b,0x7a,0x0b,0x37])
box=secretbox(firstkey,nonce,b'\x00'*0)  # sanity only below
salt="sk-litellm-salt-test"; plain="sk-upstream-0123456789"
n=bytes(range(24))
enc=n+secretbox(hashlib.sha256(salt.encode()).digest(),n,plain.encode())
print(base64.urlsafe_b64encode(enc).decode())
print(secretbox(firstkey,nonce,bytes(range(5))).hex())
