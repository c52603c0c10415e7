// Generated (400 types): each conformance below is one record in the
// executable's swift5_protocol_conformances section.

protocol Shape { var sides: Int { get } }

struct Type000: Shape { var sides: Int { 0 } }
struct Type001: Shape { var sides: Int { 1 } }
struct Type002: Shape { var sides: Int { 2 } }
struct Type003: Shape { var sides: Int { 3 } }
struct Type004: Shape { var sides: Int { 4 } }
struct Type005: Shape { var sides: Int { 5 } }
struct Type006: Shape { var sides: Int { 6 } }
struct Type007: Shape { var sides: Int { 7 } }
struct Type008: Shape { var sides: Int { 8 } }
struct Type009: Shape { var sides: Int { 9 } }
struct Type010: Shape { var sides: Int { 10 } }
struct Type011: Shape { var sides: Int { 11 } }
struct Type012: Shape { var sides: Int { 12 } }
struct Type013: Shape { var sides: Int { 13 } }
struct Type014: Shape { var sides: Int { 14 } }
struct Type015: Shape { var sides: Int { 15 } }
struct Type016: Shape { var sides: Int { 16 } }
struct Type017: Shape { var sides: Int { 17 } }
struct Type018: Shape { var sides: Int { 18 } }
struct Type019: Shape { var sides: Int { 19 } }
struct Type020: Shape { var sides: Int { 20 } }
struct Type021: Shape { var sides: Int { 21 } }
struct Type022: Shape { var sides: Int { 22 } }
struct Type023: Shape { var sides: Int { 23 } }
struct Type024: Shape { var sides: Int { 24 } }
struct Type025: Shape { var sides: Int { 25 } }
struct Type026: Shape { var sides: Int { 26 } }
struct Type027: Shape { var sides: Int { 27 } }
struct Type028: Shape { var sides: Int { 28 } }
struct Type029: Shape { var sides: Int { 29 } }
struct Type030: Shape { var sides: Int { 30 } }
struct Type031: Shape { var sides: Int { 31 } }
struct Type032: Shape { var sides: Int { 32 } }
struct Type033: Shape { var sides: Int { 33 } }
struct Type034: Shape { var sides: Int { 34 } }
struct Type035: Shape { var sides: Int { 35 } }
struct Type036: Shape { var sides: Int { 36 } }
struct Type037: Shape { var sides: Int { 37 } }
struct Type038: Shape { var sides: Int { 38 } }
struct Type039: Shape { var sides: Int { 39 } }
struct Type040: Shape { var sides: Int { 40 } }
struct Type041: Shape { var sides: Int { 41 } }
struct Type042: Shape { var sides: Int { 42 } }
struct Type043: Shape { var sides: Int { 43 } }
struct Type044: Shape { var sides: Int { 44 } }
struct Type045: Shape { var sides: Int { 45 } }
struct Type046: Shape { var sides: Int { 46 } }
struct Type047: Shape { var sides: Int { 47 } }
struct Type048: Shape { var sides: Int { 48 } }
struct Type049: Shape { var sides: Int { 49 } }
struct Type050: Shape { var sides: Int { 50 } }
struct Type051: Shape { var sides: Int { 51 } }
struct Type052: Shape { var sides: Int { 52 } }
struct Type053: Shape { var sides: Int { 53 } }
struct Type054: Shape { var sides: Int { 54 } }
struct Type055: Shape { var sides: Int { 55 } }
struct Type056: Shape { var sides: Int { 56 } }
struct Type057: Shape { var sides: Int { 57 } }
struct Type058: Shape { var sides: Int { 58 } }
struct Type059: Shape { var sides: Int { 59 } }
struct Type060: Shape { var sides: Int { 60 } }
struct Type061: Shape { var sides: Int { 61 } }
struct Type062: Shape { var sides: Int { 62 } }
struct Type063: Shape { var sides: Int { 63 } }
struct Type064: Shape { var sides: Int { 64 } }
struct Type065: Shape { var sides: Int { 65 } }
struct Type066: Shape { var sides: Int { 66 } }
struct Type067: Shape { var sides: Int { 67 } }
struct Type068: Shape { var sides: Int { 68 } }
struct Type069: Shape { var sides: Int { 69 } }
struct Type070: Shape { var sides: Int { 70 } }
struct Type071: Shape { var sides: Int { 71 } }
struct Type072: Shape { var sides: Int { 72 } }
struct Type073: Shape { var sides: Int { 73 } }
struct Type074: Shape { var sides: Int { 74 } }
struct Type075: Shape { var sides: Int { 75 } }
struct Type076: Shape { var sides: Int { 76 } }
struct Type077: Shape { var sides: Int { 77 } }
struct Type078: Shape { var sides: Int { 78 } }
struct Type079: Shape { var sides: Int { 79 } }
struct Type080: Shape { var sides: Int { 80 } }
struct Type081: Shape { var sides: Int { 81 } }
struct Type082: Shape { var sides: Int { 82 } }
struct Type083: Shape { var sides: Int { 83 } }
struct Type084: Shape { var sides: Int { 84 } }
struct Type085: Shape { var sides: Int { 85 } }
struct Type086: Shape { var sides: Int { 86 } }
struct Type087: Shape { var sides: Int { 87 } }
struct Type088: Shape { var sides: Int { 88 } }
struct Type089: Shape { var sides: Int { 89 } }
struct Type090: Shape { var sides: Int { 90 } }
struct Type091: Shape { var sides: Int { 91 } }
struct Type092: Shape { var sides: Int { 92 } }
struct Type093: Shape { var sides: Int { 93 } }
struct Type094: Shape { var sides: Int { 94 } }
struct Type095: Shape { var sides: Int { 95 } }
struct Type096: Shape { var sides: Int { 96 } }
struct Type097: Shape { var sides: Int { 97 } }
struct Type098: Shape { var sides: Int { 98 } }
struct Type099: Shape { var sides: Int { 99 } }
struct Type100: Shape { var sides: Int { 100 } }
struct Type101: Shape { var sides: Int { 101 } }
struct Type102: Shape { var sides: Int { 102 } }
struct Type103: Shape { var sides: Int { 103 } }
struct Type104: Shape { var sides: Int { 104 } }
struct Type105: Shape { var sides: Int { 105 } }
struct Type106: Shape { var sides: Int { 106 } }
struct Type107: Shape { var sides: Int { 107 } }
struct Type108: Shape { var sides: Int { 108 } }
struct Type109: Shape { var sides: Int { 109 } }
struct Type110: Shape { var sides: Int { 110 } }
struct Type111: Shape { var sides: Int { 111 } }
struct Type112: Shape { var sides: Int { 112 } }
struct Type113: Shape { var sides: Int { 113 } }
struct Type114: Shape { var sides: Int { 114 } }
struct Type115: Shape { var sides: Int { 115 } }
struct Type116: Shape { var sides: Int { 116 } }
struct Type117: Shape { var sides: Int { 117 } }
struct Type118: Shape { var sides: Int { 118 } }
struct Type119: Shape { var sides: Int { 119 } }
struct Type120: Shape { var sides: Int { 120 } }
struct Type121: Shape { var sides: Int { 121 } }
struct Type122: Shape { var sides: Int { 122 } }
struct Type123: Shape { var sides: Int { 123 } }
struct Type124: Shape { var sides: Int { 124 } }
struct Type125: Shape { var sides: Int { 125 } }
struct Type126: Shape { var sides: Int { 126 } }
struct Type127: Shape { var sides: Int { 127 } }
struct Type128: Shape { var sides: Int { 128 } }
struct Type129: Shape { var sides: Int { 129 } }
struct Type130: Shape { var sides: Int { 130 } }
struct Type131: Shape { var sides: Int { 131 } }
struct Type132: Shape { var sides: Int { 132 } }
struct Type133: Shape { var sides: Int { 133 } }
struct Type134: Shape { var sides: Int { 134 } }
struct Type135: Shape { var sides: Int { 135 } }
struct Type136: Shape { var sides: Int { 136 } }
struct Type137: Shape { var sides: Int { 137 } }
struct Type138: Shape { var sides: Int { 138 } }
struct Type139: Shape { var sides: Int { 139 } }
struct Type140: Shape { var sides: Int { 140 } }
struct Type141: Shape { var sides: Int { 141 } }
struct Type142: Shape { var sides: Int { 142 } }
struct Type143: Shape { var sides: Int { 143 } }
struct Type144: Shape { var sides: Int { 144 } }
struct Type145: Shape { var sides: Int { 145 } }
struct Type146: Shape { var sides: Int { 146 } }
struct Type147: Shape { var sides: Int { 147 } }
struct Type148: Shape { var sides: Int { 148 } }
struct Type149: Shape { var sides: Int { 149 } }
struct Type150: Shape { var sides: Int { 150 } }
struct Type151: Shape { var sides: Int { 151 } }
struct Type152: Shape { var sides: Int { 152 } }
struct Type153: Shape { var sides: Int { 153 } }
struct Type154: Shape { var sides: Int { 154 } }
struct Type155: Shape { var sides: Int { 155 } }
struct Type156: Shape { var sides: Int { 156 } }
struct Type157: Shape { var sides: Int { 157 } }
struct Type158: Shape { var sides: Int { 158 } }
struct Type159: Shape { var sides: Int { 159 } }
struct Type160: Shape { var sides: Int { 160 } }
struct Type161: Shape { var sides: Int { 161 } }
struct Type162: Shape { var sides: Int { 162 } }
struct Type163: Shape { var sides: Int { 163 } }
struct Type164: Shape { var sides: Int { 164 } }
struct Type165: Shape { var sides: Int { 165 } }
struct Type166: Shape { var sides: Int { 166 } }
struct Type167: Shape { var sides: Int { 167 } }
struct Type168: Shape { var sides: Int { 168 } }
struct Type169: Shape { var sides: Int { 169 } }
struct Type170: Shape { var sides: Int { 170 } }
struct Type171: Shape { var sides: Int { 171 } }
struct Type172: Shape { var sides: Int { 172 } }
struct Type173: Shape { var sides: Int { 173 } }
struct Type174: Shape { var sides: Int { 174 } }
struct Type175: Shape { var sides: Int { 175 } }
struct Type176: Shape { var sides: Int { 176 } }
struct Type177: Shape { var sides: Int { 177 } }
struct Type178: Shape { var sides: Int { 178 } }
struct Type179: Shape { var sides: Int { 179 } }
struct Type180: Shape { var sides: Int { 180 } }
struct Type181: Shape { var sides: Int { 181 } }
struct Type182: Shape { var sides: Int { 182 } }
struct Type183: Shape { var sides: Int { 183 } }
struct Type184: Shape { var sides: Int { 184 } }
struct Type185: Shape { var sides: Int { 185 } }
struct Type186: Shape { var sides: Int { 186 } }
struct Type187: Shape { var sides: Int { 187 } }
struct Type188: Shape { var sides: Int { 188 } }
struct Type189: Shape { var sides: Int { 189 } }
struct Type190: Shape { var sides: Int { 190 } }
struct Type191: Shape { var sides: Int { 191 } }
struct Type192: Shape { var sides: Int { 192 } }
struct Type193: Shape { var sides: Int { 193 } }
struct Type194: Shape { var sides: Int { 194 } }
struct Type195: Shape { var sides: Int { 195 } }
struct Type196: Shape { var sides: Int { 196 } }
struct Type197: Shape { var sides: Int { 197 } }
struct Type198: Shape { var sides: Int { 198 } }
struct Type199: Shape { var sides: Int { 199 } }
struct Type200: Shape { var sides: Int { 200 } }
struct Type201: Shape { var sides: Int { 201 } }
struct Type202: Shape { var sides: Int { 202 } }
struct Type203: Shape { var sides: Int { 203 } }
struct Type204: Shape { var sides: Int { 204 } }
struct Type205: Shape { var sides: Int { 205 } }
struct Type206: Shape { var sides: Int { 206 } }
struct Type207: Shape { var sides: Int { 207 } }
struct Type208: Shape { var sides: Int { 208 } }
struct Type209: Shape { var sides: Int { 209 } }
struct Type210: Shape { var sides: Int { 210 } }
struct Type211: Shape { var sides: Int { 211 } }
struct Type212: Shape { var sides: Int { 212 } }
struct Type213: Shape { var sides: Int { 213 } }
struct Type214: Shape { var sides: Int { 214 } }
struct Type215: Shape { var sides: Int { 215 } }
struct Type216: Shape { var sides: Int { 216 } }
struct Type217: Shape { var sides: Int { 217 } }
struct Type218: Shape { var sides: Int { 218 } }
struct Type219: Shape { var sides: Int { 219 } }
struct Type220: Shape { var sides: Int { 220 } }
struct Type221: Shape { var sides: Int { 221 } }
struct Type222: Shape { var sides: Int { 222 } }
struct Type223: Shape { var sides: Int { 223 } }
struct Type224: Shape { var sides: Int { 224 } }
struct Type225: Shape { var sides: Int { 225 } }
struct Type226: Shape { var sides: Int { 226 } }
struct Type227: Shape { var sides: Int { 227 } }
struct Type228: Shape { var sides: Int { 228 } }
struct Type229: Shape { var sides: Int { 229 } }
struct Type230: Shape { var sides: Int { 230 } }
struct Type231: Shape { var sides: Int { 231 } }
struct Type232: Shape { var sides: Int { 232 } }
struct Type233: Shape { var sides: Int { 233 } }
struct Type234: Shape { var sides: Int { 234 } }
struct Type235: Shape { var sides: Int { 235 } }
struct Type236: Shape { var sides: Int { 236 } }
struct Type237: Shape { var sides: Int { 237 } }
struct Type238: Shape { var sides: Int { 238 } }
struct Type239: Shape { var sides: Int { 239 } }
struct Type240: Shape { var sides: Int { 240 } }
struct Type241: Shape { var sides: Int { 241 } }
struct Type242: Shape { var sides: Int { 242 } }
struct Type243: Shape { var sides: Int { 243 } }
struct Type244: Shape { var sides: Int { 244 } }
struct Type245: Shape { var sides: Int { 245 } }
struct Type246: Shape { var sides: Int { 246 } }
struct Type247: Shape { var sides: Int { 247 } }
struct Type248: Shape { var sides: Int { 248 } }
struct Type249: Shape { var sides: Int { 249 } }
struct Type250: Shape { var sides: Int { 250 } }
struct Type251: Shape { var sides: Int { 251 } }
struct Type252: Shape { var sides: Int { 252 } }
struct Type253: Shape { var sides: Int { 253 } }
struct Type254: Shape { var sides: Int { 254 } }
struct Type255: Shape { var sides: Int { 255 } }
struct Type256: Shape { var sides: Int { 256 } }
struct Type257: Shape { var sides: Int { 257 } }
struct Type258: Shape { var sides: Int { 258 } }
struct Type259: Shape { var sides: Int { 259 } }
struct Type260: Shape { var sides: Int { 260 } }
struct Type261: Shape { var sides: Int { 261 } }
struct Type262: Shape { var sides: Int { 262 } }
struct Type263: Shape { var sides: Int { 263 } }
struct Type264: Shape { var sides: Int { 264 } }
struct Type265: Shape { var sides: Int { 265 } }
struct Type266: Shape { var sides: Int { 266 } }
struct Type267: Shape { var sides: Int { 267 } }
struct Type268: Shape { var sides: Int { 268 } }
struct Type269: Shape { var sides: Int { 269 } }
struct Type270: Shape { var sides: Int { 270 } }
struct Type271: Shape { var sides: Int { 271 } }
struct Type272: Shape { var sides: Int { 272 } }
struct Type273: Shape { var sides: Int { 273 } }
struct Type274: Shape { var sides: Int { 274 } }
struct Type275: Shape { var sides: Int { 275 } }
struct Type276: Shape { var sides: Int { 276 } }
struct Type277: Shape { var sides: Int { 277 } }
struct Type278: Shape { var sides: Int { 278 } }
struct Type279: Shape { var sides: Int { 279 } }
struct Type280: Shape { var sides: Int { 280 } }
struct Type281: Shape { var sides: Int { 281 } }
struct Type282: Shape { var sides: Int { 282 } }
struct Type283: Shape { var sides: Int { 283 } }
struct Type284: Shape { var sides: Int { 284 } }
struct Type285: Shape { var sides: Int { 285 } }
struct Type286: Shape { var sides: Int { 286 } }
struct Type287: Shape { var sides: Int { 287 } }
struct Type288: Shape { var sides: Int { 288 } }
struct Type289: Shape { var sides: Int { 289 } }
struct Type290: Shape { var sides: Int { 290 } }
struct Type291: Shape { var sides: Int { 291 } }
struct Type292: Shape { var sides: Int { 292 } }
struct Type293: Shape { var sides: Int { 293 } }
struct Type294: Shape { var sides: Int { 294 } }
struct Type295: Shape { var sides: Int { 295 } }
struct Type296: Shape { var sides: Int { 296 } }
struct Type297: Shape { var sides: Int { 297 } }
struct Type298: Shape { var sides: Int { 298 } }
struct Type299: Shape { var sides: Int { 299 } }
struct Type300: Shape { var sides: Int { 300 } }
struct Type301: Shape { var sides: Int { 301 } }
struct Type302: Shape { var sides: Int { 302 } }
struct Type303: Shape { var sides: Int { 303 } }
struct Type304: Shape { var sides: Int { 304 } }
struct Type305: Shape { var sides: Int { 305 } }
struct Type306: Shape { var sides: Int { 306 } }
struct Type307: Shape { var sides: Int { 307 } }
struct Type308: Shape { var sides: Int { 308 } }
struct Type309: Shape { var sides: Int { 309 } }
struct Type310: Shape { var sides: Int { 310 } }
struct Type311: Shape { var sides: Int { 311 } }
struct Type312: Shape { var sides: Int { 312 } }
struct Type313: Shape { var sides: Int { 313 } }
struct Type314: Shape { var sides: Int { 314 } }
struct Type315: Shape { var sides: Int { 315 } }
struct Type316: Shape { var sides: Int { 316 } }
struct Type317: Shape { var sides: Int { 317 } }
struct Type318: Shape { var sides: Int { 318 } }
struct Type319: Shape { var sides: Int { 319 } }
struct Type320: Shape { var sides: Int { 320 } }
struct Type321: Shape { var sides: Int { 321 } }
struct Type322: Shape { var sides: Int { 322 } }
struct Type323: Shape { var sides: Int { 323 } }
struct Type324: Shape { var sides: Int { 324 } }
struct Type325: Shape { var sides: Int { 325 } }
struct Type326: Shape { var sides: Int { 326 } }
struct Type327: Shape { var sides: Int { 327 } }
struct Type328: Shape { var sides: Int { 328 } }
struct Type329: Shape { var sides: Int { 329 } }
struct Type330: Shape { var sides: Int { 330 } }
struct Type331: Shape { var sides: Int { 331 } }
struct Type332: Shape { var sides: Int { 332 } }
struct Type333: Shape { var sides: Int { 333 } }
struct Type334: Shape { var sides: Int { 334 } }
struct Type335: Shape { var sides: Int { 335 } }
struct Type336: Shape { var sides: Int { 336 } }
struct Type337: Shape { var sides: Int { 337 } }
struct Type338: Shape { var sides: Int { 338 } }
struct Type339: Shape { var sides: Int { 339 } }
struct Type340: Shape { var sides: Int { 340 } }
struct Type341: Shape { var sides: Int { 341 } }
struct Type342: Shape { var sides: Int { 342 } }
struct Type343: Shape { var sides: Int { 343 } }
struct Type344: Shape { var sides: Int { 344 } }
struct Type345: Shape { var sides: Int { 345 } }
struct Type346: Shape { var sides: Int { 346 } }
struct Type347: Shape { var sides: Int { 347 } }
struct Type348: Shape { var sides: Int { 348 } }
struct Type349: Shape { var sides: Int { 349 } }
struct Type350: Shape { var sides: Int { 350 } }
struct Type351: Shape { var sides: Int { 351 } }
struct Type352: Shape { var sides: Int { 352 } }
struct Type353: Shape { var sides: Int { 353 } }
struct Type354: Shape { var sides: Int { 354 } }
struct Type355: Shape { var sides: Int { 355 } }
struct Type356: Shape { var sides: Int { 356 } }
struct Type357: Shape { var sides: Int { 357 } }
struct Type358: Shape { var sides: Int { 358 } }
struct Type359: Shape { var sides: Int { 359 } }
struct Type360: Shape { var sides: Int { 360 } }
struct Type361: Shape { var sides: Int { 361 } }
struct Type362: Shape { var sides: Int { 362 } }
struct Type363: Shape { var sides: Int { 363 } }
struct Type364: Shape { var sides: Int { 364 } }
struct Type365: Shape { var sides: Int { 365 } }
struct Type366: Shape { var sides: Int { 366 } }
struct Type367: Shape { var sides: Int { 367 } }
struct Type368: Shape { var sides: Int { 368 } }
struct Type369: Shape { var sides: Int { 369 } }
struct Type370: Shape { var sides: Int { 370 } }
struct Type371: Shape { var sides: Int { 371 } }
struct Type372: Shape { var sides: Int { 372 } }
struct Type373: Shape { var sides: Int { 373 } }
struct Type374: Shape { var sides: Int { 374 } }
struct Type375: Shape { var sides: Int { 375 } }
struct Type376: Shape { var sides: Int { 376 } }
struct Type377: Shape { var sides: Int { 377 } }
struct Type378: Shape { var sides: Int { 378 } }
struct Type379: Shape { var sides: Int { 379 } }
struct Type380: Shape { var sides: Int { 380 } }
struct Type381: Shape { var sides: Int { 381 } }
struct Type382: Shape { var sides: Int { 382 } }
struct Type383: Shape { var sides: Int { 383 } }
struct Type384: Shape { var sides: Int { 384 } }
struct Type385: Shape { var sides: Int { 385 } }
struct Type386: Shape { var sides: Int { 386 } }
struct Type387: Shape { var sides: Int { 387 } }
struct Type388: Shape { var sides: Int { 388 } }
struct Type389: Shape { var sides: Int { 389 } }
struct Type390: Shape { var sides: Int { 390 } }
struct Type391: Shape { var sides: Int { 391 } }
struct Type392: Shape { var sides: Int { 392 } }
struct Type393: Shape { var sides: Int { 393 } }
struct Type394: Shape { var sides: Int { 394 } }
struct Type395: Shape { var sides: Int { 395 } }
struct Type396: Shape { var sides: Int { 396 } }
struct Type397: Shape { var sides: Int { 397 } }
struct Type398: Shape { var sides: Int { 398 } }
struct Type399: Shape { var sides: Int { 399 } }

/// One value of each type, as `Any`: each `is` check on it is a first look-up for that type.
let allValues: [Any] = [
    Type000(), Type001(), Type002(), Type003(), Type004(), Type005(), Type006(), Type007(),
    Type008(), Type009(), Type010(), Type011(), Type012(), Type013(), Type014(), Type015(),
    Type016(), Type017(), Type018(), Type019(), Type020(), Type021(), Type022(), Type023(),
    Type024(), Type025(), Type026(), Type027(), Type028(), Type029(), Type030(), Type031(),
    Type032(), Type033(), Type034(), Type035(), Type036(), Type037(), Type038(), Type039(),
    Type040(), Type041(), Type042(), Type043(), Type044(), Type045(), Type046(), Type047(),
    Type048(), Type049(), Type050(), Type051(), Type052(), Type053(), Type054(), Type055(),
    Type056(), Type057(), Type058(), Type059(), Type060(), Type061(), Type062(), Type063(),
    Type064(), Type065(), Type066(), Type067(), Type068(), Type069(), Type070(), Type071(),
    Type072(), Type073(), Type074(), Type075(), Type076(), Type077(), Type078(), Type079(),
    Type080(), Type081(), Type082(), Type083(), Type084(), Type085(), Type086(), Type087(),
    Type088(), Type089(), Type090(), Type091(), Type092(), Type093(), Type094(), Type095(),
    Type096(), Type097(), Type098(), Type099(), Type100(), Type101(), Type102(), Type103(),
    Type104(), Type105(), Type106(), Type107(), Type108(), Type109(), Type110(), Type111(),
    Type112(), Type113(), Type114(), Type115(), Type116(), Type117(), Type118(), Type119(),
    Type120(), Type121(), Type122(), Type123(), Type124(), Type125(), Type126(), Type127(),
    Type128(), Type129(), Type130(), Type131(), Type132(), Type133(), Type134(), Type135(),
    Type136(), Type137(), Type138(), Type139(), Type140(), Type141(), Type142(), Type143(),
    Type144(), Type145(), Type146(), Type147(), Type148(), Type149(), Type150(), Type151(),
    Type152(), Type153(), Type154(), Type155(), Type156(), Type157(), Type158(), Type159(),
    Type160(), Type161(), Type162(), Type163(), Type164(), Type165(), Type166(), Type167(),
    Type168(), Type169(), Type170(), Type171(), Type172(), Type173(), Type174(), Type175(),
    Type176(), Type177(), Type178(), Type179(), Type180(), Type181(), Type182(), Type183(),
    Type184(), Type185(), Type186(), Type187(), Type188(), Type189(), Type190(), Type191(),
    Type192(), Type193(), Type194(), Type195(), Type196(), Type197(), Type198(), Type199(),
    Type200(), Type201(), Type202(), Type203(), Type204(), Type205(), Type206(), Type207(),
    Type208(), Type209(), Type210(), Type211(), Type212(), Type213(), Type214(), Type215(),
    Type216(), Type217(), Type218(), Type219(), Type220(), Type221(), Type222(), Type223(),
    Type224(), Type225(), Type226(), Type227(), Type228(), Type229(), Type230(), Type231(),
    Type232(), Type233(), Type234(), Type235(), Type236(), Type237(), Type238(), Type239(),
    Type240(), Type241(), Type242(), Type243(), Type244(), Type245(), Type246(), Type247(),
    Type248(), Type249(), Type250(), Type251(), Type252(), Type253(), Type254(), Type255(),
    Type256(), Type257(), Type258(), Type259(), Type260(), Type261(), Type262(), Type263(),
    Type264(), Type265(), Type266(), Type267(), Type268(), Type269(), Type270(), Type271(),
    Type272(), Type273(), Type274(), Type275(), Type276(), Type277(), Type278(), Type279(),
    Type280(), Type281(), Type282(), Type283(), Type284(), Type285(), Type286(), Type287(),
    Type288(), Type289(), Type290(), Type291(), Type292(), Type293(), Type294(), Type295(),
    Type296(), Type297(), Type298(), Type299(), Type300(), Type301(), Type302(), Type303(),
    Type304(), Type305(), Type306(), Type307(), Type308(), Type309(), Type310(), Type311(),
    Type312(), Type313(), Type314(), Type315(), Type316(), Type317(), Type318(), Type319(),
    Type320(), Type321(), Type322(), Type323(), Type324(), Type325(), Type326(), Type327(),
    Type328(), Type329(), Type330(), Type331(), Type332(), Type333(), Type334(), Type335(),
    Type336(), Type337(), Type338(), Type339(), Type340(), Type341(), Type342(), Type343(),
    Type344(), Type345(), Type346(), Type347(), Type348(), Type349(), Type350(), Type351(),
    Type352(), Type353(), Type354(), Type355(), Type356(), Type357(), Type358(), Type359(),
    Type360(), Type361(), Type362(), Type363(), Type364(), Type365(), Type366(), Type367(),
    Type368(), Type369(), Type370(), Type371(), Type372(), Type373(), Type374(), Type375(),
    Type376(), Type377(), Type378(), Type379(), Type380(), Type381(), Type382(), Type383(),
    Type384(), Type385(), Type386(), Type387(), Type388(), Type389(), Type390(), Type391(),
    Type392(), Type393(), Type394(), Type395(), Type396(), Type397(), Type398(), Type399(),
]
